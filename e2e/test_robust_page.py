"""User data in the page is text, never HTML: column names, cells, file names and a text's
preview that hold markup are shown as typed and run nothing (the DOM would not build the
elements even without the Content-Security-Policy, which blocks inline handlers as well).

The tests run in file order on one page with the traps set (a module fixture): a payload that ran
in one test fails the tests after it too, and a Pyodide start costs about ten seconds of CI's two
cores. The CSP test, which puts markup into the page itself, goes last."""
from __future__ import annotations

import httpx
import pytest

from conftest import open_page, wait_ready

IMG = "<img src=x onerror=alert(1)>"
SCRIPT = "<script>window.__xss = 'script'</script>"
CELL = "<img src=y onerror=window.__xss='cell'>"
SVG_NAME = "<svg onload=alert(2)>.csv"
CSV = f"{IMG},{SCRIPT},n\n{CELL},a,1\n<b>bold</b>,b,2\n"
TEXT = f"{IMG}\n{SCRIPT}\nTo be, or not to be.\n" * 4

# Every way a payload could signal that it ran.
TRAPS = """
  window.__xss = null;
  window.alert = (m) => { window.__xss = 'alert ' + m; };
  window.__csp = [];
  document.addEventListener('securitypolicyviolation', (e) => { window.__csp.push(e.violatedDirective); });
"""


@pytest.fixture(scope="module")
def trapped(browser, server):
    """The page at "/", ready, with TRAPS set before any of its scripts and dialogs recorded."""
    page = open_page(browser, server)
    page.add_init_script(TRAPS)
    page.dialogs = []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.goto("/")
    wait_ready(page)
    yield page
    page.context.close()


def assert_nothing_ran(page, where: str):
    assert page.dialogs == []
    assert page.evaluate("() => window.__xss") is None
    # No element was built from the payloads: not an img, script, svg or b inside `where`.
    assert page.locator(f"{where} :is(img, script, svg, b)").count() == 0


def test_markup_in_a_csv_is_shown_as_text(trapped, server, tmp_path):
    page = trapped
    path = tmp_path / SVG_NAME
    path.write_text(CSV)
    page.wait_for_selector("#preview-table")
    page.set_input_files("#file-input", str(path))
    page.wait_for_function(
        "() => document.querySelector('#data-status').textContent.includes('stored on the server')",
        timeout=60_000)
    headers = page.locator("#preview-table th").all_inner_texts()
    assert headers == [IMG, SCRIPT, "n"]
    assert page.locator("#preview-table td").first.inner_text() == CELL
    assert page.locator("#column-table td").first.inner_text() == IMG
    assert f"Preview: {SVG_NAME}" in page.locator("#data-preview h2").inner_text()
    assert IMG in page.locator("#target-select").inner_text() or \
        IMG in page.locator("#feature-list").inner_text()
    page.wait_for_timeout(500)  # an image error event would have fired by now
    assert_nothing_ran(page, "#panels")
    # The server kept the names as given, too.
    stored = [d for d in httpx.get(f"{server}/api/datasets").json()["datasets"]
              if d["name"] == SVG_NAME]
    assert stored and httpx.get(f"{server}/api/datasets/{stored[0]['id']}").json()[
        "columns"][0]["name"] == IMG


def test_markup_in_a_text_is_shown_as_text(trapped, tmp_path):
    page = trapped
    path = tmp_path / "<img src=z onerror=alert(3)>.txt"
    path.write_text(TEXT)
    page.click("#tab-transformer")
    page.wait_for_selector("#text-select option", state="attached")
    page.set_input_files("#text-file", str(path))
    page.wait_for_function(
        "() => document.querySelector('#text-preview').textContent.includes('To be, or not')",
        timeout=60_000)
    assert page.locator("#text-preview").inner_text().startswith(f"{IMG}\n{SCRIPT}\n")
    assert path.name in page.locator("#text-select").inner_text()
    page.wait_for_timeout(500)
    assert_nothing_ran(page, "#panels")


def test_csp_blocks_inline_handlers_and_other_origins(trapped, server):
    """Defence in depth, had markup reached the DOM: the Content-Security-Policy stops inline
    handlers and any request to another origin (here the same server as `localhost`)."""
    page = trapped
    other = server.replace("127.0.0.1", "localhost")
    result = page.evaluate("""async (other) => {
        const before = window.__csp.length;  // the violations of this test's markup and fetch only
        document.body.insertAdjacentHTML('beforeend', '<img id=xss src=x onerror="window.__xss=1">');
        await new Promise((r) => setTimeout(r, 300));
        const fetched = await fetch(other + '/api/health').then(() => 'loaded', () => 'blocked');
        await new Promise((r) => setTimeout(r, 300));  // the violation event comes after
        return {fetched, csp: window.__csp.slice(before)};
    }""", other)
    assert result["fetched"] == "blocked"
    assert "connect-src" in result["csp"], result
    assert {"script-src-attr", "script-src"} & set(result["csp"]), result
    assert page.evaluate("() => window.__xss") is None and page.dialogs == []
