#!/usr/bin/python3
"""Validates Kubernetes manifests offline against the API models of Debian's python3-kubernetes.

    /usr/bin/python3 deploy/kubernetes/validate.py FILE.yaml...

Every document must have apiVersion and kind of a known model (V1StatefulSet, V1Service, ...), and
every field must exist in the model, hold the model's type and be present where the model
requires it. The kubernetes client itself ignores unknown fields when it deserializes, so the
walk here is strict: an unknown field, a wrong type and a missing required field are each an
error naming the file, the document and the field's path. Exit code 0 when every document is
valid, 1 otherwise (each error on its own line), 2 for a bad command line or unreadable file.
"""
import datetime
import re
import sys

import kubernetes.client as k8s
import yaml

PRIMITIVES = {"str": str, "int": int, "float": (int, float), "bool": bool}


class Invalid(Exception):
    pass


def model_class(api_version, kind):
    """The client model of apiVersion/kind, e.g. apps/v1 StatefulSet -> V1StatefulSet."""
    version = api_version.split("/")[-1]
    name = version[0].upper() + version[1:] + kind
    cls = getattr(k8s, name, None)
    if cls is None or not hasattr(cls, "openapi_types"):
        raise Invalid(f"apiVersion {api_version!r} kind {kind!r}: no such model ({name})")
    return cls


def convert(value, type_name, path):
    """Checks `value` against the OpenAPI type `type_name` and returns it as a model value."""
    if value is None:
        return None
    match = re.fullmatch(r"list\[(.*)\]", type_name)
    if match:
        if not isinstance(value, list):
            raise Invalid(f"{path}: must be a list, not {type(value).__name__}")
        return [convert(v, match.group(1), f"{path}[{i}]") for i, v in enumerate(value)]
    match = re.fullmatch(r"dict\(str, (.*)\)", type_name)
    if match:
        if not isinstance(value, dict):
            raise Invalid(f"{path}: must be a mapping, not {type(value).__name__}")
        return {k: convert(v, match.group(1), f"{path}.{k}") for k, v in value.items()}
    if type_name in PRIMITIVES:
        expected = PRIMITIVES[type_name]
        if isinstance(value, bool) and type_name != "bool":
            raise Invalid(f"{path}: must be {type_name}, not bool")
        if not isinstance(value, expected):
            raise Invalid(f"{path}: must be {type_name}, not {type(value).__name__} ({value!r})")
        return value
    if type_name == "object":
        return value  # IntOrString, Quantity and free-form fields
    if type_name in ("datetime", "date"):
        if not isinstance(value, (str, datetime.date)):
            raise Invalid(f"{path}: must be a {type_name}")
        return value
    cls = getattr(k8s, type_name, None)
    if cls is None:
        raise Invalid(f"{path}: unknown model type {type_name}")
    return build(value, cls, path)


def build(document, cls, path):
    """Builds model `cls` from mapping `document`, refusing unknown fields and wrong types; the
    model's constructor refuses missing required fields."""
    if not isinstance(document, dict):
        raise Invalid(f"{path}: must be a mapping ({cls.__name__}), not {type(document).__name__}")
    by_json = {json: attr for attr, json in cls.attribute_map.items()}
    kwargs = {}
    for key, value in document.items():
        if key not in by_json:
            known = ", ".join(sorted(by_json))
            raise Invalid(f"{path}.{key}: unknown field of {cls.__name__} (known: {known})")
        attr = by_json[key]
        kwargs[attr] = convert(value, cls.openapi_types[attr], f"{path}.{key}")
    try:
        return cls(**kwargs)
    except ValueError as error:  # "Invalid value for `containers`, must not be `None`"
        missing = re.search(r"`(\w+)`", str(error))
        field = cls.attribute_map.get(missing.group(1), missing.group(1)) if missing else "?"
        raise Invalid(f"{path}.{field}: required field of {cls.__name__} is missing") from None


def validate_file(path):
    """The errors of every document in the YAML file at `path` ([] when all are valid)."""
    errors = []
    with open(path, encoding="utf-8") as f:
        documents = [d for d in yaml.safe_load_all(f) if d is not None]
    if not documents:
        return [f"{path}: no document"]
    for number, document in enumerate(documents, 1):
        where = f"{path} document {number}"
        try:
            if not isinstance(document, dict):
                raise Invalid("must be a mapping")
            for key in ("apiVersion", "kind"):
                if not isinstance(document.get(key), str):
                    raise Invalid(f"{key}: required, a string")
            cls = model_class(document["apiVersion"], document["kind"])
            build(document, cls, document["kind"])
        except Invalid as error:
            errors.append(f"{where}: {error}")
    return errors


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    errors = []
    for path in argv[1:]:
        try:
            errors += validate_file(path)
        except (OSError, yaml.YAMLError) as error:
            print(f"{path}: {error}", file=sys.stderr)
            return 2
    for error in errors:
        print(error)
    if not errors:
        print(f"{len(argv) - 1} file(s) valid")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
