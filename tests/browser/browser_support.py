"""What the browser tests share: headless Chromium, the launcher as a child process, polling.

Debian's chromium, chromium-driver and python3-selenium (scripts/setup.sh); run with
/usr/bin/python3. Every wait has a generous deadline and says what it waited for.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request


class Failure(AssertionError):
    """A check a user would notice failed."""


def check(condition, message):
    if not condition:
        raise Failure(message)


def wait_for(what, predicate, deadline_s=120, every_s=0.3):
    """Calls predicate() until it returns a truthy value, which is returned; fails naming `what`."""
    end = time.monotonic() + deadline_s
    last_error = None
    while time.monotonic() < end:
        try:
            value = predicate()
            if value:
                return value
        except Exception as e:  # a page or server not ready yet
            last_error = e
        time.sleep(every_s)
    raise Failure(f"waited {deadline_s} s for {what}" + (f" (last error: {last_error})" if last_error else ""))


def get_json(url, timeout_s=5):
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return json.loads(response.read().decode())


def start_chromium(profile_dir):
    """Headless Chromium through chromedriver; fails with the reason when they are missing."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as e:
        raise Failure(f"python3-selenium is missing ({e}); scripts/setup.sh installs it")
    for binary in ("/usr/bin/chromium", "/usr/bin/chromedriver"):
        check(os.path.exists(binary), f"{binary} is missing; scripts/setup.sh installs chromium and chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run", "--window-size=1400,2000", f"--user-data-dir={profile_dir}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


class Launcher:
    """meshlearn-launch as a child process whose output goes to a log file."""

    def __init__(self, args, log_path):
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.process = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def dashboard_url(self, deadline_s=180):
        def found():
            check(self.process.poll() is None, f"the launcher exited early:\n{self.text()}")
            m = re.search(r"dashboard: (http://127\.0\.0\.1:\d+/)", self.text())
            return m.group(1) if m else None
        return wait_for("the launcher to print its dashboard address", found, deadline_s)

    def wait(self, deadline_s):
        try:
            return self.process.wait(timeout=deadline_s)
        except subprocess.TimeoutExpired:
            raise Failure(f"waited {deadline_s} s for the launcher to finish:\n{self.text()[-3000:]}")

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def run_main(test, description):
    """Runs test(workdir) and reports like a test runner: exit 0 only when it passed."""
    workdir = tempfile.mkdtemp(prefix=f"meshlearn-browser-{os.getpid()}-")
    started = time.monotonic()
    try:
        test(workdir)
    except Failure as e:
        print(f"FAILED: {description}: {e}", flush=True)
        print("0 passed, 1 failed")
        return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"PASSED: {description} ({time.monotonic() - started:.0f} s)")
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit("a library of the browser tests; run dashboard_test.py")
