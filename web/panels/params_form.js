// A kind's parameters as a form, derived from its table (GET /api/kinds: py_core/params.py's
// describe()): a field a parameter, labelled and helped as the table says, each value checked as
// it is typed against the table's types and ranges (the server checks the same), kept in the URL
// under a prefix ("gb.max_iter"). The control follows the types: numbers a number box, words and
// numbers together a text box (max_features: sqrt, 0.5 or 3), a plain switch a checkbox, choices
// a select. A box's empty text is the parameter's null where the table allows one, else its
// default (a default in words, which the box would otherwise have to show, is what empty means).
import { param } from "../kinds.js";
import { initial } from "../state.js";
import { el } from "../ui.js";

const NUMERIC = new Set(["integer", "number", "fraction"]);
const WHOLE = /^-?\d+$/;

// What a type allows, in words: "a whole number from 2 to 255", "a fraction (above 0, at most 1)".
// most: a bound the form knows and the table cannot (the features chosen); of: what a fraction is
// of ("the rows").
function rangeText(t, { most = null, of = null } = {}) {
  const BIG = 2 ** 31 - 1;
  const top = t.max === null || t.max === undefined || t.max >= BIG ? null : t.max;
  if (t.type === "integer") {
    const hi = most === null ? top : Math.min(most, top ?? most);
    const noun = "a whole number";
    if (t.min === null || t.min === undefined) return hi === null ? noun : `${noun}, at most ${hi}`;
    return hi === null ? `${noun}, ${t.min} or more` : `${noun} from ${t.min} to ${hi}`;
  }
  const lo = t.min === null || t.min === undefined ? null : t.min_open ? `above ${t.min}` : `${t.min} or more`;
  const up = top === null ? null : `${t.max_open ? "below" : "at most"} ${top}`;
  const bounds = [lo, up].filter(Boolean).join(", ");
  if (t.type === "fraction") return `a fraction${of ? ` of ${of}` : ""}${bounds ? ` (${bounds})` : ""}`;
  return bounds ? `a number ${bounds}` : "a number";
}

// Whether the type takes the typed number. A whole number's text is a fraction only where the
// table takes no whole numbers: where it does (max_features, min_samples_split), 3 is a count.
function accepts(t, v, raw, counts) {
  if (t.type === "integer" && !WHOLE.test(raw)) return false;
  if (t.type === "fraction" && counts && WHOLE.test(raw)) return false;
  if (t.min !== null && t.min !== undefined && (v < t.min || (t.min_open && v === t.min))) return false;
  return t.max === null || t.max === undefined || !(v > t.max || (t.max_open && v === t.max));
}

// The controls: each gives {control, read(): [value, problem], text(): what the URL keeps}, where
// value undefined is "the default" (left out of the job). `t`: the types the table gives, by kind.

// A switch: "1" or "0" in the URL (the forest's links have said so since before the table).
function checkbox(p, id, asked, start) {
  const control = el("input", { type: "checkbox", id, checked: asked === null ? start : asked !== "0" && asked !== "false" });
  return { control, startText: start ? "1" : "0", read: () => [control.checked, null], text: () => (control.checked ? "1" : "0") };
}

// A box of numbers, or of words and numbers. Empty: null where the table allows it, unless the
// default is a word (which the box would else have to show). `field.most`: a count's bound.
function box(p, t, id, asked, startText, shown, field) {
  const control = el("input", { type: t.choices.length ? "text" : "number", step: t.choices.length ? null : "any", id,
                                value: asked ?? startText, "aria-describedby": `${id}-problem` });
  const emptyIs = t.nullable && typeof p.default !== "string" ? null : undefined;
  const counts = t.numeric.some((n) => n.type === "integer");
  function problem() {
    const ways = [...t.choices.filter((c) => c !== p.default), ...t.numeric.map((n) => rangeText(n, { most: field.most, of: shown.of }))];
    // What empty means: none, or the table's default where that is a number (Trees: 100).
    const empty = shown.empty ?? (emptyIs === null ? "none" : typeof p.default === "number" ? String(p.default) : null);
    const list = ways.length > 1 ? `${ways.slice(0, -1).join(", ")}, or ${ways.at(-1)}` : ways[0];
    return `${p.label}: ${list}${empty ? `, or empty for ${empty}` : ""}.`;
  }
  function read() {
    const raw = control.value.trim();
    if (control.validity.badInput) return [undefined, `${p.label}: type a number.`];
    if (raw === "") return [emptyIs, null];
    if (t.choices.includes(raw)) return [raw, null];
    const v = Number(raw);
    const type = Number.isFinite(v) ? t.numeric.find((n) => accepts(n, v, raw, counts)) : null;
    if (!type) return [undefined, problem()];
    if (type.type === "integer" && field.most !== null && v > field.most) return [undefined, `${p.label}: at most ${field.most}, ${shown.most}.`];
    // A fraction of 1 crosses JSON as the integer 1, which means one where the table takes
    // counts: sent as what the form says means the same (max_features: null, every feature).
    return [type.type === "fraction" && Number.isInteger(v) && "one" in shown ? shown.one : v, null];
  }
  return { control, startText, read, text: () => control.value.trim() };
}

// A select: the choices (or those the form offers), a switch's on and off, and null as "none"
// (or "default" where null is the default).
function select(p, t, id, asked, startText, shown) {
  const options = shown.options ? shown.options.map((c) => [c, c])
    : [...(t.nullable ? [["", p.default === null ? "default" : "none"]] : []), ...t.choices.map((c) => [c, c]),
      ...(t.boolean ? [["true", "on"], ["false", "off"]] : [])];
  const control = el("select", { id }, options.map(([v, text]) => el("option", { value: v }, text)));
  if (options.some(([v]) => v === (asked ?? startText))) control.value = asked ?? startText;
  const read = () => {
    const v = control.value;
    return [v === "" ? null : v === "true" ? true : v === "false" ? false : v, null];
  };
  return { control, startText, read, text: () => control.value };
}

// One field: {name, control, label, problem (its words under it), event (what an edit fires),
// startText, read(), text(), most}. `shown`: the form's words beside the table's (see paramsForm).
function field(kind, name, prefix, idPrefix, start, shown) {
  const p = param(kind, name);
  const types = p.types || [];
  const t = { nullable: types.some((n) => n.type === "null"), numeric: types.filter((n) => NUMERIC.has(n.type)),
              choices: types.filter((n) => n.type === "choice").flatMap((n) => n.options),
              boolean: types.some((n) => n.type === "boolean") };
  const id = `${idPrefix}-${name}`;
  const asked = initial(`${prefix}${name}`);
  const f = { name, problem: el("span", { class: "field-problem", id: `${id}-problem` }), most: null };
  Object.assign(f, t.boolean && types.length === 1 ? checkbox(p, id, asked, start)
    : t.numeric.length ? box(p, t, id, asked, String(start ?? ""), shown, f) : select(p, t, id, asked, String(start ?? ""), shown));
  f.control.title = p.help || "";
  const text = shown.hint ? `${p.label} (${shown.hint})` : p.label;
  f.label = f.control.type === "checkbox" ? el("label", { class: "field" }, el("span", {}, f.control, ` ${text}`))
    : el("label", { class: "field" }, text, f.control, f.problem);
  f.event = f.control.tagName === "SELECT" || f.control.type === "checkbox" ? "change" : "input";
  return f;
}

// The form of `names` (in that order) of `kind`'s table. `start`: a field's starting value where
// it is not the table's default. `shown`: per field, the form's words beside the table's: hint
// (after the label, in brackets), empty (what an empty box means, in its problem's words), of
// (what a fraction is of), options (the choices a select offers, where not all the table's),
// most (what bounds a count the table cannot know: the panel sets `fields[name].most`), one (what
// a fraction of 1 is sent as). `sendDefaults`: every value the form holds goes in the params (a
// run records the forest's trees at 100), else only those that differ from the table's defaults.
// Returns {element, fields, values(), set(values), save()}: values() gives {params} or
// {error, field} (the first with a problem: every field's own shows under it); a disabled field
// is left out, as an HTML form leaves it; set() puts a preset's values in; save() writes the URL.
export function paramsForm(kind, names, { prefix, idPrefix, start = {}, shown = {}, sendDefaults = false }) {
  const fields = Object.fromEntries(names.map((n) => [n, field(kind, n, prefix, idPrefix,
    n in start ? start[n] : param(kind, n).default, shown[n] || {})]));
  const element = el("div", { class: "form" }, Object.values(fields).map((f) => f.label));
  const defaults = Object.fromEntries(names.map((n) => [n, param(kind, n).default]));

  function values() {
    const params = {};
    let first = null;
    for (const f of Object.values(fields)) {
      const [v, problem] = f.read();
      if (f.control.type !== "checkbox" && f.control.tagName === "INPUT") f.control.setAttribute("aria-invalid", problem ? "true" : "false");
      f.problem.textContent = problem || "";
      if (problem) { first ||= { error: problem, field: f.name }; continue; }
      if (f.control.disabled || v === undefined) continue;
      // The default left out: a fraction's 1 would cross JSON as the integer 1, which the table
      // refuses where a whole number means something else (max_features).
      if (sendDefaults || v !== defaults[f.name]) params[f.name] = v;
    }
    return first || { params };
  }

  function set(preset) {
    for (const [name, v] of Object.entries(preset)) {
      const f = fields[name];
      if (f?.control.type === "checkbox") f.control.checked = Boolean(v);
      else if (f) f.control.value = v === null ? "" : String(v);
    }
  }

  // The URL holds what differs from where the form starts.
  function save() {
    const u = new URL(location.href);
    for (const f of Object.values(fields)) {
      const text = f.text();
      if (text === f.startText) u.searchParams.delete(`${prefix}${f.name}`);
      else u.searchParams.set(`${prefix}${f.name}`, text);
    }
    window.history.replaceState(window.history.state, "", u);
  }

  return { element, fields, values, set, save };
}
