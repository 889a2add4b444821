#!/usr/bin/python3
"""The launcher's dashboard and a node's page in headless Chromium (CTest label `browser`).

A small synthetic run (9 node processes, two methods of 10 rounds paced to 1.5 s) with --dashboard:
1. the page's heatmap cells and node table match the nodes' own /status: each value lies between
   a /status read before the page's data was polled and one read after (the counters only grow),
   and equals it where the node did not move in between;
2. the page updates by itself while rounds advance;
3. a node's own page (its http_port, in the second method) matches its /status the same way;
4. clicking a node shows its probabilities and scores per round;
5. after the run, `meshlearn-launch serve` shows heatmap cells and a node table equal to the run's
   heatmap.csv and rounds.csv.
Screenshots go to --artifacts (dashboard-live.png, node-page.png, dashboard-finished.png).

Usage: /usr/bin/python3 dashboard_test.py --launch build/tools/meshlearn-launch
           --source . --artifacts build/tests/browser/artifacts
"""
import argparse
import csv
import math
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_support import Failure, Launcher, check, get_json, run_main, start_chromium, wait_for  # noqa: E402

READ_HEATMAP = """return [...document.querySelectorAll('#heatmap rect.cell')]
    .map(r => [r.dataset.i, r.dataset.j, r.dataset.value]);"""
READ_TABLE = """return [...document.querySelectorAll('#nodes tbody tr')].map(tr => {
  const row = {id: tr.dataset.id};
  for (const td of tr.children) {
    if (td.dataset.field) row[td.dataset.field] = td.dataset.value !== undefined ? td.dataset.value : td.textContent;
  }
  return row;
});"""
READ_BOTH = "return [(() => {" + READ_HEATMAP + "})(), (() => {" + READ_TABLE + "})()];"
NODES = 9
METHODS = ["random", "cos_weights"]


def body_number(driver, key):
    value = driver.execute_script(f"return document.body.dataset.{key} || '0';")
    return float(value)


def node_ports(method_dir):
    """Each node's http_port, from the configs the launcher wrote (not from the dashboard)."""
    ports = {}
    for name in os.listdir(method_dir):
        if not name.startswith("node-"):
            continue
        with open(os.path.join(method_dir, name, "node.toml")) as f:
            m = re.search(r"^http_port\s*=\s*(\d+)", f.read(), re.M)
        check(m, f"{method_dir}/{name}/node.toml has no http_port although --dashboard was given")
        ports[name[len("node-"):]] = int(m.group(1))
    return ports


def statuses(ports):
    out = {}
    for node, port in ports.items():
        try:
            out[node] = get_json(f"http://127.0.0.1:{port}/status")
        except OSError:
            out[node] = None
    return out


def peer(status, peer_id):
    return next((p for p in status["peers"] if p["id"] == peer_id), None) if status else None


def between(what, low, value, high):
    check(low <= value <= high, f"{what}: the page shows {value}, /status said {low} before and {high} after")


def check_dashboard_against_status(driver, url, ports):
    before = statuses(ports)
    observed = get_json(url + "api/state")["observations"]
    wait_for("the page to show a poll made after /status was read",
             lambda: body_number(driver, "observations") >= observed + 2, 60)
    cells, table = driver.execute_script(READ_BOTH)
    after = statuses(ports)
    check(len(cells) == NODES * NODES, f"the heatmap has {len(cells)} cells, expected {NODES * NODES}")
    total = 0
    for i, j, value in cells:
        if i == j:
            continue
        check(before[i] and after[i], f"node {i} did not answer /status")
        low = peer(before[i], j)["times_sampled"] if peer(before[i], j) else 0
        high = peer(after[i], j)["times_sampled"]
        between(f"heatmap cell ({i}, {j})", low, int(float(value)), high)
        total += int(float(value))
    check(total > 0, "every heatmap cell is 0 although rounds were completed")
    check(len(table) == NODES, f"the node table has {len(table)} rows, expected {NODES}")
    for row in table:
        b, a = before[row["id"]], after[row["id"]]
        between(f"round of node {row['id']}", b["round"], int(row["round"]), a["round"])
        between(f"bytes in of node {row['id']}", b["counters"]["bytes_in"], int(row["bytes_in"]), a["counters"]["bytes_in"])
        between(f"bytes out of node {row['id']}", b["counters"]["bytes_out"], int(row["bytes_out"]), a["counters"]["bytes_out"])
        between(f"failures of node {row['id']}", b["counters"]["missed_deadlines"], int(row["failures"]),
                a["counters"]["missed_deadlines"])
        if b["round"] == a["round"] and b["val_loss"] is not None:
            check(math.isclose(float(row["val_loss"]), a["val_loss"], rel_tol=1e-9),
                  f"validation loss of node {row['id']}: page {row['val_loss']}, /status {a['val_loss']}")
        alive = lambda s: sum(p["liveness"] == "alive" for p in s["peers"])  # noqa: E731
        if alive(b) == alive(a):
            check(row["peers_alive"] == f"{alive(a)} / {len(a['peers'])}",
                  f"peers alive of node {row['id']}: page '{row['peers_alive']}', /status {alive(a)} of {len(a['peers'])}")
    return max(int(row["round"]) for row in table)


def check_node_page(driver, node, port, artifacts):
    driver.get(f"http://127.0.0.1:{port}/")
    wait_for(f"node {node}'s page to show its status", lambda: body_number(driver, "updates") >= 1, 60)
    before = get_json(f"http://127.0.0.1:{port}/status")
    seen = body_number(driver, "updates")
    wait_for("the node page to poll /status again", lambda: body_number(driver, "updates") >= seen + 2, 60)
    rows, round_shown = driver.execute_script("""return [[...document.querySelectorAll('#peers tbody tr')].map(tr =>
        [tr.dataset.peer, ...[...tr.children].map(td => td.textContent)]),
        document.getElementById('round').dataset.round];""")
    after = get_json(f"http://127.0.0.1:{port}/status")
    check(sorted(r[0] for r in rows) == sorted(p["id"] for p in after["peers"]),
          f"the node page lists peers {[r[0] for r in rows]}, /status {[p['id'] for p in after['peers']]}")
    for row in rows:
        low = peer(before, row[0])["times_sampled"] if peer(before, row[0]) else 0
        between(f"node {node}'s page: times it sampled {row[0]}", low, int(row[5]), peer(after, row[0])["times_sampled"])
    between(f"node {node}'s page: round", before["round"], int(round_shown), after["round"])
    driver.save_screenshot(os.path.join(artifacts, "node-page.png"))


def check_node_detail(driver):
    driver.execute_script("document.querySelector('#nodes tbody tr[data-id=\"0\"]').click();")
    cells = wait_for("the node panel to show probabilities per round", lambda: driver.execute_script(
        "return !document.getElementById('node-panel').hidden && "
        "document.querySelectorAll('#node-probabilities rect.cell[data-value]:not([data-value=\"\"])').length;"), 60)
    check(cells >= NODES - 1, f"node 0's probability matrix shows {cells} values, expected at least {NODES - 1}")


def read_matrix_csv(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    cols = rows[0][1:]
    return {(r[0], cols[k]): r[k + 1] for r in rows[1:] for k in range(len(cols))}


def check_finished_run(driver, launch, out, workdir, artifacts):
    serve = Launcher([launch, "serve", out, "--dashboard", "0"], os.path.join(workdir, "serve.log"))
    try:
        url = serve.dashboard_url(60)
        driver.get(url)
        wait_for("the served page to list the methods", lambda: driver.execute_script(
            "return document.querySelectorAll('#methods tbody tr').length;") == len(METHODS), 60)
        for method in METHODS:
            driver.execute_script(f"document.querySelector('#methods tr[data-method=\"{method}\"]').click();")
            wait_for(f"the page to show {method}", lambda: driver.execute_script(
                "return document.body.dataset.method;") == method and len(driver.execute_script(READ_TABLE)) == NODES, 60)
            cells, table = driver.execute_script(READ_BOTH)
            heat = read_matrix_csv(os.path.join(out, method, "heatmap.csv"))
            for i, j, value in cells:
                if i == j:
                    continue
                check(float(value) == float(heat[(i, j)]),
                      f"{method}: heatmap cell ({i}, {j}) is {value} on the page, {heat[(i, j)]} in heatmap.csv")
            for row in table:
                with open(os.path.join(out, method, f"node-{row['id']}", "rounds.csv")) as f:
                    rounds = list(csv.DictReader(f))
                last = rounds[-1]
                failures = sum(int(r["sampled"]) - int(r["answered"]) for r in rounds)
                for field, expected in (("round", last["round"]), ("bytes_in", last["bytes_in"]),
                                        ("bytes_out", last["bytes_out"]), ("failures", failures)):
                    check(int(row[field]) == int(expected),
                          f"{method}: node {row['id']}'s {field} is {row[field]} on the page, {expected} in rounds.csv")
                check(math.isclose(float(row["val_loss"]), float(last["val_loss"]), rel_tol=1e-6),
                      f"{method}: node {row['id']}'s val loss is {row['val_loss']} on the page, {last['val_loss']} in rounds.csv")
            print(f"finished run, {method}: heatmap and node table equal heatmap.csv and rounds.csv", flush=True)
        driver.save_screenshot(os.path.join(artifacts, "dashboard-finished.png"))
    finally:
        serve.stop()
    check(serve.process.returncode == 0, f"serve exited with {serve.process.returncode} on SIGTERM:\n{serve.text()}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--launch", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--artifacts", required=True)
    args = parser.parse_args()
    os.makedirs(args.artifacts, exist_ok=True)

    def test(workdir):
        out = os.path.join(workdir, "run")
        launcher = Launcher([args.launch, os.path.join(args.source, "configs/scenarios/synthetic.toml"),
                             "--out", out, "--nodes", str(NODES), "--methods", ",".join(METHODS),
                             "--set", "node.training.rounds=10", "--set", "node.round.min_round_s=1.5",
                             "--dashboard", "0"], os.path.join(workdir, "launch.log"))
        driver = None
        try:
            url = launcher.dashboard_url()
            driver = start_chromium(os.path.join(workdir, "chromium-profile"))
            driver.get(url)
            ports = wait_for("the first method's node configs", lambda: os.path.isdir(os.path.join(out, METHODS[0])) and
                             len(node_ports(os.path.join(out, METHODS[0]))) == NODES and node_ports(os.path.join(out, METHODS[0])), 120)
            wait_for("the page to show round 1 of a node", lambda: any(
                r["round"] not in ("–", "0") for r in driver.execute_script(READ_TABLE)), 180)
            shown = check_dashboard_against_status(driver, url, ports)
            print(f"live: heatmap and node table agree with the nodes' /status (rounds up to {shown})", flush=True)
            updates = body_number(driver, "updates")
            wait_for("the page to show a later round without being reloaded", lambda: max(
                int(r["round"]) for r in driver.execute_script(READ_TABLE) if r["round"] != "–") > shown, 120)
            check(body_number(driver, "updates") > updates, "the page did not redraw")
            print("live: the page updated by itself as rounds advanced", flush=True)
            check_node_detail(driver)
            driver.save_screenshot(os.path.join(args.artifacts, "dashboard-live.png"))
            # A node page of the second method, which has all its rounds ahead of it.
            second = os.path.join(out, METHODS[1])
            ports = wait_for("the second method's node configs", lambda: os.path.isdir(second) and
                             len(node_ports(second)) == NODES and node_ports(second), 300)
            wait_for("node 0 of the second method to answer /status",
                     lambda: get_json(f"http://127.0.0.1:{ports['0']}/status")["round"] >= 0, 180)
            check_node_page(driver, "0", ports["0"], args.artifacts)
            print("node page: peers, times sampled and round agree with /status", flush=True)
            code = launcher.wait(600)
            check(code == 0, f"the launcher exited with {code}:\n{launcher.text()[-3000:]}")
            check("dashboard (random):" in launcher.text(), "the launcher did not report the dashboard's cost")
            check_finished_run(driver, args.launch, out, workdir, args.artifacts)
        finally:
            if driver:
                driver.quit()
            launcher.stop()

    return run_main(test, "dashboard and node page in headless Chromium")


if __name__ == "__main__":
    sys.exit(main())
