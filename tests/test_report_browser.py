"""The report as a person looks at it: headless Chromium (Debian's `chromium`; .ci/run installs it)
renders the page; the screenshot must not be blank and the page must make no network request.

Chromium is pointed at a local proxy that logs every request it receives, loopback included
(`--proxy-bypass-list=<-loopback>`). Chromium's own services (sign-in, component updates) call
home at start even with background networking off; they are sent to a made-up host of ours
(SERVICE_HOST, through --gaia-url, --google-apis-url and --component-updater=url-source) and
set apart, and the profile turns spell-check dictionaries off; any other request is the page's.
A control page that fetches an image shows that the proxy sees requests, and a blank page that
the screenshot checks can fail."""
import json
import re
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from synthetic import lda_documents, planted_topics, write_corpus
from topicscale.cli import cli
from topicscale.models.lda import LDAModel

pytest.importorskip("matplotlib")
Image = pytest.importorskip("PIL.Image")

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
WINDOW = (1100, 1800)
BAR_RGB = (0x3b, 0x6e, 0xa8)         # report_plots.COLOUR: the bars and the curve
SERVICE_HOST = "chromium-service.invalid"
QUIET = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-extensions", "--disable-default-apps", "--disable-breakpad",
         "--disable-domain-reliability", "--disable-client-side-phishing-detection", "--metrics-recording-only",
         "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,MediaRouter,Translate",
         f"--gaia-url=http://{SERVICE_HOST}/", f"--google-apis-url=http://{SERVICE_HOST}/",
         f"--component-updater=url-source=http://{SERVICE_HOST}/update"]


def browser():
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium on this machine, so the report is not looked at in a browser "
                "(Debian: apt-get install -y chromium; .ci/run installs it)")


class LoggingProxy:
    """A TCP server on 127.0.0.1 that records the first line of every request (GET url, CONNECT
    host:port) and answers 502, so nothing gets through."""

    def __init__(self):
        self.requests = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:                      # closed
                return
            with conn:
                conn.settimeout(5)
                try:
                    self.requests.append(conn.recv(4096).decode("latin-1").split("\r\n", 1)[0])
                    conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                except OSError:
                    self.requests.append("(unreadable connection)")

    def close(self):
        self.sock.close()


def chromium(page, tmp_path, name, *args):
    """Open `page` in headless Chromium with `args`, through a logging proxy: (the finished
    process, the requests seen besides Chromium's own services)."""
    exe = browser()
    profile = tmp_path / f"{name}-profile"
    (profile / "Default").mkdir(parents=True)
    (profile / "Default" / "Preferences").write_text(json.dumps(
        {"browser": {"enable_spellchecking": False}, "spellcheck": {"dictionaries": []}}))
    proxy = LoggingProxy()
    try:
        proc = subprocess.run([exe, *QUIET, f"--user-data-dir={profile}",
                               f"--proxy-server=http://127.0.0.1:{proxy.port}", "--proxy-bypass-list=<-loopback>",
                               f"--window-size={WINDOW[0]},{WINDOW[1]}", "--virtual-time-budget=3000",
                               *args, Path(page).resolve().as_uri()],
                              capture_output=True, text=True, timeout=120)
    finally:
        proxy.close()
    return proc, [r for r in proxy.requests if SERVICE_HOST not in r]


def screenshot(page, tmp_path, name="shot"):
    """Render `page`: (RGB array, the requests seen besides Chromium's own services)."""
    png = tmp_path / f"{name}.png"
    proc, requests = chromium(page, tmp_path, name, f"--screenshot={png}")
    assert png.exists(), f"Chromium wrote no screenshot (exit {proc.returncode}): {proc.stderr[-2000:]}"
    with Image.open(png) as im:
        rgb = np.asarray(im.convert("RGB"))
    return rgb, requests


def page_widths(page, tmp_path, name="widths"):
    """(the page's scrollWidth, the window's innerWidth) once loaded, measured by a script
    added to a copy of the page (the report itself has none)."""
    measured = tmp_path / f"{name}.html"
    script = ('<script>addEventListener("load", () => { document.body.dataset.widths = '
              '`${document.documentElement.scrollWidth} ${innerWidth}`; });</script>')
    measured.write_text(Path(page).read_text().replace("</body>", script + "</body>"))
    proc, _ = chromium(measured, tmp_path, name, "--dump-dom")
    found = re.search(r'data-widths="(\d+) (\d+)"', proc.stdout)
    assert found, f"Chromium measured nothing (exit {proc.returncode}): {proc.stderr[-2000:]}"
    return int(found[1]), int(found[2])


def looks_drawn(rgb):
    """(non-white share, distinct colours, pixels of the plots' blue): a blank page has ~0, 1, 0."""
    non_white = float(np.mean(np.any(rgb < 240, axis=2)))
    colours = len(np.unique(rgb.reshape(-1, 3), axis=0))
    blue = int(np.sum(np.all(np.abs(rgb.astype(int) - BAR_RGB) <= 6, axis=2)))
    return non_white, colours, blue


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    rng = np.random.default_rng(9)
    beta = planted_topics(8, 80, rng)
    root = tmp_path_factory.mktemp("browser")
    train = write_corpus(root / "train", lda_documents(beta, 240, 40, 0.3, rng), 80)
    heldout = write_corpus(root / "heldout", lda_documents(beta, 40, 40, 0.3, rng), 80)
    r = CliRunner().invoke(cli, ["fit", str(train.path), "-k", "8", "--batch-size", "20", "--passes", "2",
                                 "--heldout", str(heldout.path), "--eval-every", "2", "-q",
                                 "--report", str(root / "report.html"), "-o", str(root / "model")],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return root / "report.html"


def test_the_report_renders_and_fetches_nothing(page, tmp_path):
    rgb, requests = screenshot(page, tmp_path)
    assert requests == [], f"the page made network requests: {requests}"
    assert rgb.shape[:2] == (WINDOW[1], WINDOW[0])
    non_white, colours, blue = looks_drawn(rgb)
    assert non_white > 0.04 and colours > 200 and blue > 500, (non_white, colours, blue)


def test_controls_a_blank_page_and_a_page_that_fetches(tmp_path):
    """The checks can fail: an empty page looks blank, and a page with a remote image is caught."""
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    rgb, requests = screenshot(blank, tmp_path, "blank")
    non_white, colours, blue = looks_drawn(rgb)
    assert non_white < 0.01 and colours < 10 and blue == 0 and requests == []
    fetching = tmp_path / "fetching.html"
    fetching.write_text('<!DOCTYPE html><html><body><img src="https://report.invalid/plot.png"></body></html>')
    _, requests = screenshot(fetching, tmp_path, "fetching")
    assert any("report.invalid" in line for line in requests), requests


def test_a_page_of_many_topics_fits_the_window_width(tmp_path):
    """150 topics that all repeat one another, one of them topped by a 170-character URL: the
    lists of repeated topics and the long word wrap within the table."""
    rng = np.random.default_rng(4)
    n_words, n_topics = 300, 150
    vocab = ["https://example.org/" + "a" * 150] + [f"w{i}" for i in range(1, n_words)]
    lam = np.outer(np.linspace(50, 1, n_words), np.ones(n_topics)) * rng.uniform(0.999, 1.001, (n_words, n_topics))
    LDAModel(lam=lam, alpha=np.full(n_topics, 0.1), eta=0.01, vocab=vocab).save(tmp_path / "m")
    r = CliRunner().invoke(cli, ["report", str(tmp_path / "m"), "-o", str(tmp_path / "r.html")],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    text = (tmp_path / "r.html").read_text()
    assert text.count("(repeats 0 1 2 3") >= 100 and vocab[0] in text
    scroll_width, window_width = page_widths(tmp_path / "r.html", tmp_path)
    assert 0 < scroll_width <= window_width == WINDOW[0]
