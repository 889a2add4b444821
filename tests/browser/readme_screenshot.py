#!/usr/bin/python3
"""Takes the README's picture of the dashboard (docs/dashboard.png) with the browser tests' Chromium.

Usage, with a run going on (e.g. `build/tools/meshlearn-launch configs/scenarios/synthetic.toml
--methods cos_weights --nodes 100 --dashboard 8080`):
    /usr/bin/python3 tests/browser/readme_screenshot.py http://127.0.0.1:8080/ docs/dashboard.png
It waits for a heatmap with samples in it, clicks node 5, saves the picture, then watches the
page until the run ends and prints how long its redraws took (the page measures them itself).
"""
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_support import start_chromium, wait_for  # noqa: E402


def main():
    url, png = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix=f"meshlearn-shot-{os.getpid()}-") as profile:
        driver = start_chromium(profile)
        try:
            driver.get(url)
            cells = wait_for("a heatmap with samples", lambda: driver.execute_script(
                "const c = [...document.querySelectorAll('#heatmap rect.cell')];"
                "return c.some(r => Number(r.dataset.value) > 0) ? c.length : 0;"), 600)
            time.sleep(10)  # a few rounds more
            driver.execute_script("document.querySelector('#nodes tbody tr[data-id=\"5\"]').click();")
            time.sleep(3)
            driver.save_screenshot(png)
            print(f"{png}: {cells} heatmap cells", flush=True)
            redraws = []
            while True:
                ms, live = driver.execute_script(
                    "return [document.body.dataset.renderMs, document.getElementById('connection').className];")
                redraws.append(float(ms or 0))
                if live != "live":
                    break
                time.sleep(2)
            print(f"redraws: {len(redraws)} sampled, median {statistics.median(redraws):.0f} ms, "
                  f"max {max(redraws):.0f} ms", flush=True)
        finally:
            driver.quit()


if __name__ == "__main__":
    main()
