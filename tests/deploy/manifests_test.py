#!/usr/bin/python3
"""The Kubernetes manifests in deploy/kubernetes/ validate offline against python3-kubernetes's
API models, the validator refuses an unknown field, a wrong type and a missing field, and the
ConfigMap's node template resolves for a StatefulSet pod (a UTS namespace gives it the pod's host
name).

    /usr/bin/python3 tests/deploy/manifests_test.py MESHLEARN_NODE_BINARY
"""
import copy
import os
import subprocess
import sys
import tempfile
import unittest

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(ROOT, "deploy", "kubernetes")
VALIDATE = os.path.join(DEPLOY, "validate.py")
NODE = None  # set from the command line


def manifests():
    return sorted(os.path.join(DEPLOY, f) for f in os.listdir(DEPLOY) if f.endswith(".yaml"))


def validate(*paths):
    return subprocess.run(["/usr/bin/python3", VALIDATE, *paths], capture_output=True, text=True)


def load(name):
    with open(os.path.join(DEPLOY, name), encoding="utf-8") as f:
        return yaml.safe_load(f)


class Manifests(unittest.TestCase):
    def test_every_manifest_validates(self):
        kinds = {load(os.path.basename(p))["kind"] for p in manifests()}
        self.assertEqual(kinds, {"StatefulSet", "Service", "PersistentVolumeClaim", "ConfigMap",
                                 "Job"})
        result = validate(*manifests())
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def check_refused(self, mutate, expected):
        statefulset = load("statefulset.yaml")
        broken = copy.deepcopy(statefulset)
        mutate(broken)
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            yaml.safe_dump(broken, f)
        try:
            result = validate(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertIn(expected, result.stdout)

    def test_an_unknown_field_is_refused(self):
        def mutate(d):
            d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Never"
        self.check_refused(
            mutate, "StatefulSet.spec.template.spec.containers[0].imagePullPolicyy: unknown field")

    def test_a_wrong_type_is_refused(self):
        def mutate(d):
            d["spec"]["replicas"] = "nine"
        self.check_refused(mutate, "StatefulSet.spec.replicas: must be int, not str ('nine')")

    def test_a_missing_field_is_refused(self):
        def mutate(d):
            del d["spec"]["template"]["spec"]["containers"][0]["name"]
        self.check_refused(
            mutate, "StatefulSet.spec.template.spec.containers[0].name: required field")

    def test_the_statefulset_and_the_template_agree(self):
        statefulset, template = load("statefulset.yaml"), load("template.yaml")
        text = template["data"]["node-template.toml"]
        self.assertIn(f"size = {statefulset['spec']['replicas']}", text)
        self.assertIn(f"service = \"{statefulset['spec']['serviceName']}\"", text)
        port = statefulset["spec"]["template"]["spec"]["containers"][0]["ports"][0]
        self.assertIn(f"port = {port['containerPort']}", text)

    def test_the_template_resolves_for_a_statefulset_pod(self):
        text = load("template.yaml")["data"]["node-template.toml"]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "node-template.toml")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            env = dict(os.environ, KUBERNETES_SERVICE_HOST="10.96.0.1")
            result = subprocess.run(
                ["unshare", "--uts", "sh", "-c",
                 'hostname meshlearn-3 && exec "$0" --config "$1" --check', NODE, path],
                capture_output=True, text=True, env=env)
        out = result.stdout + result.stderr
        if result.returncode != 0 and "unshare" in out and "Operation not permitted" in out:
            self.fail("cannot check the template: no UTS namespace here (needs root): " + out.strip())
        self.assertEqual(result.returncode, 0, out)
        self.assertIn("kubernetes rank 3 of 9 on meshlearn-3.meshlearn", out)
        self.assertIn("advertised as tcp://meshlearn-3.meshlearn:47000", out)
        self.assertIn("bootstrapping from rank 0 at meshlearn-0.meshlearn:47000", out)
        self.assertIn("config OK", out)


if __name__ == "__main__":
    NODE = sys.argv.pop(1)
    unittest.main(verbosity=2)
