"""The official Python `kubernetes` client against the simulated API server.

Run by tests/python_client.rs with KUBECONFIG set. Exits non-zero with a message on the first
failed check; prints one line per check that passed.
"""
import json
import sys
import threading
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException


def check(cond, what):
    if not cond:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"ok: {what}")


def main():
    config.load_kube_config()
    v1 = client.CoreV1Api()

    nodes = v1.list_node()
    check(len(nodes.items) == 2, "two worker nodes listed")
    ready = [c for c in nodes.items[0].status.conditions if c.type == "Ready"]
    check(ready and ready[0].status == "True", "node reports Ready")

    # A watch started at the list's resourceVersion sees exactly the changes after it.
    rv = v1.list_namespaced_config_map("default").metadata.resource_version
    events = []

    def run_watch():
        w = watch.Watch()
        for ev in w.stream(v1.list_namespaced_config_map, "default", resource_version=rv,
                           label_selector="py=yes", timeout_seconds=10):
            events.append((ev["type"], ev["object"].metadata.name, ev["object"].data))
            if len(events) == 3:
                w.stop()

    t = threading.Thread(target=run_watch)
    t.start()
    time.sleep(0.5)
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-cm", labels={"py": "yes"}), data={"a": "1"})
    v1.create_namespaced_config_map("default", body)
    v1.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="other"), data={}))
    v1.patch_namespaced_config_map("py-cm", "default", {"data": {"a": "2"}})
    v1.delete_namespaced_config_map("py-cm", "default")
    t.join(timeout=15)
    check([(e[0], e[1]) for e in events] == [("ADDED", "py-cm"), ("MODIFIED", "py-cm"), ("DELETED", "py-cm")],
          f"watch saw ADDED, MODIFIED, DELETED in order (got {events})")
    check(events[1][2] == {"a": "2"}, "MODIFIED event carries the patched data")

    try:
        v1.read_namespaced_config_map("missing", "default")
        check(False, "reading a missing object raises")
    except ApiException as e:
        check(e.status == 404, "missing object is a 404")

    try:
        v1.create_namespaced_config_map("no-such-ns", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="x")))
        check(False, "creating in a missing namespace raises")
    except ApiException as e:
        status = json.loads(e.body)
        check(e.status == 404 and status["reason"] == "NotFound" and status["message"] == 'namespaces "no-such-ns" not found',
              "missing namespace is a 404 NotFound Status")


if __name__ == "__main__":
    main()
