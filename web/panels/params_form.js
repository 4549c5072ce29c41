// A kind's parameters as a form, derived from its table (GET /api/kinds: py_core/params.py's
// describe()): a field a parameter, labelled and helped as the table says, each value checked as
// it is typed against the table's types and ranges (the server checks the same), kept in the URL
// under a prefix ("gb.max_iter"). A number box's empty text is the parameter's null where the
// table allows one, else its default; a choice or a switch is a select.
import { param } from "../kinds.js";
import { initial } from "../state.js";
import { el } from "../ui.js";

const NUMERIC = new Set(["integer", "number", "fraction"]);

// What a type allows, in words: "a whole number from 2 to 255", "a fraction above 0, at most 1".
function rangeText(t) {
  const noun = t.type === "integer" ? "a whole number" : t.type === "fraction" ? "a fraction" : "a number";
  const BIG = 2 ** 31 - 1;
  const hi = t.max === null || t.max === undefined || t.max >= BIG ? null : t.max;
  if (t.min === null || t.min === undefined) return hi === null ? noun : `${noun}, at most ${hi}`;
  if (t.type === "integer") return hi === null ? `${noun}, ${t.min} or more` : `${noun} from ${t.min} to ${hi}`;
  const lo = t.min_open ? `above ${t.min}` : `${t.min} or more`;
  return hi === null ? `${noun} ${lo}` : `${noun} ${lo}, ${t.max_open ? "below" : "at most"} ${hi}`;
}

function accepts(t, v, raw) {
  if (t.type === "integer" && !/^-?\d+$/.test(raw)) return false;
  if (t.min !== null && t.min !== undefined && (v < t.min || (t.min_open && v === t.min))) return false;
  return t.max === null || t.max === undefined || !(v > t.max || (t.max_open && v === t.max));
}

// One field: {name, control, problem (its words under it), read(): [value, problem]}, where value
// undefined is "the default" (left out of the job).
function field(kind, name, prefix, idPrefix, start) {
  const p = param(kind, name);
  const types = p.types || [];
  const nullable = types.some((t) => t.type === "null");
  const numeric = types.filter((t) => NUMERIC.has(t.type));
  const choices = types.filter((t) => t.type === "choice").flatMap((t) => t.options);
  const boolean = types.some((t) => t.type === "boolean");
  const id = `${idPrefix}-${name}`;
  const problem = el("span", { class: "field-problem", id: `${id}-problem` });
  const asked = initial(`${prefix}${name}`);
  let control, read;
  if (numeric.length) {
    control = el("input", { type: "number", step: "any", id, value: asked ?? String((start !== undefined ? start : p.default) ?? ""),
                            "aria-describedby": `${id}-problem` });
    const emptyText = nullable ? "empty for none" : `empty for ${p.default}`;
    read = () => {
      const raw = control.value.trim();
      if (control.validity.badInput) return [undefined, `${p.label}: type a number.`];
      if (raw === "") return [nullable ? null : undefined, null];
      const v = Number(raw);
      if (Number.isFinite(v) && numeric.some((t) => accepts(t, v, raw))) return [v, null];
      return [undefined, `${p.label}: ${numeric.map(rangeText).join(", or ")}, or ${emptyText}.`];
    };
  } else {
    // A select: the choices, a switch's on and off, and null as "none" (or the table's words).
    const options = [...(nullable ? [["", p.default === null ? "default" : "none"]] : []), ...choices.map((c) => [c, c]),
      ...(boolean ? [["true", "on"], ["false", "off"]] : [])];
    control = el("select", { id }, options.map(([v, text]) => el("option", { value: v }, text)));
    const want = asked ?? String((start !== undefined ? start : p.default) ?? "");
    if (options.some(([v]) => v === want)) control.value = want;
    read = () => {
      const v = control.value;
      return [v === "" ? null : v === "true" ? true : v === "false" ? false : v, null];
    };
  }
  control.title = p.help || "";
  const label = el("label", { class: "field" }, p.label, control, problem);
  const startText = String((start !== undefined ? start : p.default) ?? "");
  return { name, control, label, problem, read, startText };
}

// The form of `names` (in that order) of `kind`'s table. `start`: a field's starting value where
// it is not the table's default. Returns {element, fields, values(), set(values), save()}:
// values() gives {params} (defaults left out) or {error, field} (the first with a problem: every
// field's own shows under it); set() puts a preset's values in; save() writes the URL.
export function paramsForm(kind, names, { prefix, idPrefix, start = {} }) {
  const fields = Object.fromEntries(names.map((n) => [n, field(kind, n, prefix, idPrefix, start[n])]));
  const element = el("div", { class: "form" }, Object.values(fields).map((f) => f.label));
  const defaults = Object.fromEntries(names.map((n) => [n, param(kind, n).default]));

  function values() {
    const params = {};
    let first = null;
    for (const f of Object.values(fields)) {
      const [v, problem] = f.read();
      if (f.control.tagName === "INPUT") f.control.setAttribute("aria-invalid", problem ? "true" : "false");
      f.problem.textContent = problem || "";
      if (problem) { first ||= { error: problem, field: f.name }; continue; }
      // The default left out: a fraction's 1 would cross JSON as the integer 1, which the table
      // refuses where a whole number means something else (max_features).
      if (v !== undefined && v !== defaults[f.name]) params[f.name] = v;
    }
    return first || { params };
  }

  function set(preset) {
    for (const [name, v] of Object.entries(preset)) {
      const f = fields[name];
      if (f) f.control.value = v === null ? "" : String(v);
    }
  }

  // The URL holds what differs from where the form starts.
  function save() {
    const u = new URL(location.href);
    for (const f of Object.values(fields)) {
      const text = f.control.value.trim();
      if (text === f.startText) u.searchParams.delete(`${prefix}${f.name}`);
      else u.searchParams.set(`${prefix}${f.name}`, text);
    }
    window.history.replaceState(window.history.state, "", u);
  }

  return { element, fields, values, set, save };
}
