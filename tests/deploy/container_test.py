#!/usr/bin/python3
"""The container image builds (scripts/image.sh, cached after the first time) and the three
containers of deploy/compose/compose.yaml train together: every node finishes its rounds and
receives models from its peers, and the launcher's report reads their run folder.

Given a folder of built binaries (CTest passes build/tools), the image is made from them
(scripts/image.sh --binaries DIR: the Containerfile's `prebuilt` stage), so the suite does not
compile the project a second time inside podman; without one it compiles from the sources.

Each service of compose.yaml runs with `podman run` built from its definition (image,
network_mode, environment, volumes, command): Debian 12's podman-compose 1.0.3 adds a network to
every service, which podman refuses next to network_mode: host.

    /usr/bin/python3 tests/deploy/container_test.py [BINARIES_DIR]

Exit 0: passed; 1: failed; 77: podman cannot run containers here (the reason is printed; CTest
counts it as skipped, never as passed).
"""
import glob
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMAGE = "localhost/meshlearn:latest"
ENV = dict(os.environ, CONTAINERS_CONF=os.path.join(ROOT, "deploy", "containers.conf"))
SKIP = 77


def run(args, timeout=600, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, env=ENV, timeout=timeout, **kwargs)


def free_port_range(count):
    """The first of `count` consecutive ports free on 127.0.0.1 (below the ephemeral range)."""
    for base in range(20000 + os.getpid() % 5000, 32000, 7):
        sockets = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                s.bind(("127.0.0.1", port))
                sockets.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError("no free ports")


def rounds(path):
    try:
        with open(path, encoding="utf-8") as f:
            rows = [line.rstrip("\n").split(",") for line in f][1:]
    except OSError:
        return []
    return rows


def service_commands(compose_path, project):
    """One `podman run -d` per service of the compose file at `compose_path`."""
    with open(compose_path, encoding="utf-8") as f:
        compose = yaml.safe_load(f)
    base = os.path.dirname(compose_path)
    commands = {}
    for name, service in compose["services"].items():
        args = ["podman", "run", "-d", "--name", f"{project}_{name}",
                "--network", service.get("network_mode", "none")]
        for key, value in service.get("environment", {}).items():
            args += ["-e", f"{key}={value}"]
        for volume in service.get("volumes", []):
            source, rest = volume.split(":", 1)
            args += ["-v", os.path.normpath(os.path.join(base, source)) + ":" + rest]
        args.append(service["image"])
        args += service["command"]
        commands[name] = args
    return commands


def main():
    for tool in ("podman",):
        if shutil.which(tool) is None:
            print(f"SKIPPED: {tool} is not installed (scripts/setup.sh installs it)")
            return SKIP
    probe = run(["podman", "info", "--format", "{{.Host.OCIRuntime.Name}}"], timeout=120)
    if probe.returncode != 0:
        print("SKIPPED: podman cannot run here: " + (probe.stderr or probe.stdout).strip())
        return SKIP

    started = time.time()
    binaries = ["--binaries", sys.argv[1]] if len(sys.argv) > 1 else []
    built = run(["bash", os.path.join(ROOT, "scripts", "image.sh")] + binaries, timeout=3600)
    print(f"image: scripts/image.sh took {time.time() - started:.0f} s")
    if built.returncode != 0:
        print(built.stdout[-4000:] + built.stderr[-4000:])
        print("FAILED: the image did not build")
        return 1

    work = tempfile.mkdtemp(prefix=f"meshlearn-compose-{os.getpid()}-")
    project = f"meshlearn-test-{os.getpid()}"
    compose = os.path.join(work, "compose.yaml")
    failures = []
    try:
        port = free_port_range(3)
        shutil.copy(os.path.join(ROOT, "deploy", "compose", "compose.yaml"), compose)
        with open(os.path.join(ROOT, "deploy", "compose", "node-template.toml"), encoding="utf-8") as f:
            template = f.read()
        template = re.sub(r"(?m)^port = \d+$", f"port = {port}", template)
        template = re.sub(r"(?m)^rounds = \d+$", "rounds = 8", template)
        with open(os.path.join(work, "node-template.toml"), "w", encoding="utf-8") as f:
            f.write(template)
        os.makedirs(os.path.join(work, "run"))
        partition = run(["podman", "run", "--rm", "--network", "none", "-v",
                         f"{work}/run:/run/meshlearn", IMAGE, "meshlearn-launch",
                         "/opt/meshlearn/configs/scenarios/synthetic.toml", "--nodes", "3",
                         "--partition-only", "--out", "/run/meshlearn"])
        if partition.returncode != 0:
            failures.append("partition in a container failed: " + partition.stdout + partition.stderr)
            return 1
        for name, command in service_commands(compose, project).items():
            started_service = run(command)
            if started_service.returncode != 0:
                failures.append(f"service {name} did not start: " + started_service.stderr)
                return 1
        deadline = time.time() + 600
        node_dirs = [os.path.join(work, "run", "mesh", f"node-{i}") for i in range(3)]
        while time.time() < deadline:
            if all(len(rounds(os.path.join(d, "rounds.csv"))) == 9 for d in node_dirs):
                break
            time.sleep(1)
        for i, d in enumerate(node_dirs):
            rows = rounds(os.path.join(d, "rounds.csv"))
            logs = run(["podman", "logs", f"{project}_node{i}"])
            if len(rows) != 9:
                failures.append(f"node {i}: {len(rows)} of 9 rounds after 600 s; log:\n"
                                + logs.stdout[-2000:] + logs.stderr[-2000:])
                continue
            answered = sum(int(r[8]) for r in rows[1:])
            if answered == 0:
                failures.append(f"node {i} received no model from its peers")
            node_log = logs.stdout + logs.stderr
            if f"env rank {i} of 3" not in node_log:
                failures.append(f"node {i} did not take rank {i} from its environment:\n" + logs.stdout)
            if i != 0 and "peer 0 joined" not in node_log:
                failures.append(f"node {i} never met rank 0:\n" + node_log[-2000:])
            print(f"node {i}: 9 rounds, {answered} models received from peers")
        report = run(["podman", "run", "--rm", "--network", "none", "-v",
                      f"{work}/run:/run/meshlearn", IMAGE, "meshlearn-launch", "report",
                      "/run/meshlearn"])
        if report.returncode != 0 or "Test MSE" not in report.stdout:
            failures.append("the report in a container failed: " + report.stdout + report.stderr)
        else:
            print(report.stdout[report.stdout.find("Test MSE"):].split("summary:")[0])
    finally:
        for i in range(3):
            run(["podman", "rm", "-f", f"{project}_node{i}"], timeout=300)
        if not failures:
            shutil.rmtree(work, ignore_errors=True)
        for failure in failures:
            print("FAILED: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
