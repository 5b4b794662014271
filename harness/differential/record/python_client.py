"""The Python client (kubernetes==37) doing everyday things, for the recording proxy.

usage: python python_client.py KUBECONFIG NAMESPACE
"""
import sys

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

kubeconfig, ns = sys.argv[1], sys.argv[2]
config.load_kube_config(config_file=kubeconfig)
core = client.CoreV1Api()
apps = client.AppsV1Api()
batch = client.BatchV1Api()
rbac = client.RbacAuthorizationV1Api()


def expect_error(f, *a, **kw):
    try:
        f(*a, **kw)
    except ApiException as e:
        print("expected error", e.status)


cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-settings", labels={"app": "py"}), data={"a": "1"})
core.create_namespaced_config_map(ns, cm)
expect_error(core.create_namespaced_config_map, ns, cm)
got = core.read_namespaced_config_map("py-settings", ns)
core.list_namespaced_config_map(ns, label_selector="app=py")
core.list_namespaced_config_map(ns, field_selector="metadata.name=py-settings", limit=1)
core.patch_namespaced_config_map("py-settings", ns, {"data": {"b": "2"}})
got = core.read_namespaced_config_map("py-settings", ns)
got.data["c"] = "3"
core.replace_namespaced_config_map("py-settings", ns, got)
expect_error(core.read_namespaced_config_map, "missing", ns)

secret = client.V1Secret(metadata=client.V1ObjectMeta(name="py-secret"), string_data={"password": "hunter2"})
core.create_namespaced_secret(ns, secret)
core.read_namespaced_secret("py-secret", ns)

dep = client.V1Deployment(
    metadata=client.V1ObjectMeta(name="py-web", labels={"app": "py-web"}),
    spec=client.V1DeploymentSpec(
        replicas=1,
        selector=client.V1LabelSelector(match_labels={"app": "py-web"}),
        template=client.V1PodTemplateSpec(
            metadata=client.V1ObjectMeta(labels={"app": "py-web"}),
            spec=client.V1PodSpec(containers=[client.V1Container(name="web", image="nginx:1.27", ports=[client.V1ContainerPort(container_port=80)])]),
        ),
    ),
)
apps.create_namespaced_deployment(ns, dep)
apps.read_namespaced_deployment("py-web", ns)
apps.read_namespaced_deployment_scale("py-web", ns)
apps.patch_namespaced_deployment_scale("py-web", ns, {"spec": {"replicas": 2}})
apps.patch_namespaced_deployment("py-web", ns, {"metadata": {"annotations": {"touched": "yes"}}})
apps.read_namespaced_deployment_status("py-web", ns)
apps.list_namespaced_deployment(ns)
expect_error(apps.patch_namespaced_deployment, "py-web", ns, {"spec": {"replicas": -1}})

svc = client.V1Service(
    metadata=client.V1ObjectMeta(name="py-web"),
    spec=client.V1ServiceSpec(selector={"app": "py-web"}, ports=[client.V1ServicePort(port=80, target_port=80)]),
)
core.create_namespaced_service(ns, svc)
core.list_namespaced_service(ns)

job = client.V1Job(
    metadata=client.V1ObjectMeta(name="py-job"),
    spec=client.V1JobSpec(
        backoff_limit=1,
        template=client.V1PodTemplateSpec(
            spec=client.V1PodSpec(restart_policy="Never", containers=[client.V1Container(name="c", image="busybox", command=["true"])])
        ),
    ),
)
batch.create_namespaced_job(ns, job)
batch.read_namespaced_job("py-job", ns)

role = client.V1Role(
    metadata=client.V1ObjectMeta(name="py-reader"),
    rules=[client.V1PolicyRule(api_groups=[""], resources=["pods"], verbs=["get", "list"])],
)
rbac.create_namespaced_role(ns, role)
core.list_namespaced_pod(ns, label_selector="app=py-web")
core.list_namespaced_event(ns)

w = watch.Watch()
for ev in w.stream(core.list_namespaced_config_map, ns, timeout_seconds=1):
    pass

core.delete_namespaced_config_map("py-settings", ns)
expect_error(core.delete_namespaced_config_map, "py-settings", ns)
apps.delete_namespaced_deployment("py-web", ns, propagation_policy="Foreground")
core.delete_namespaced_service("py-web", ns)
batch.delete_namespaced_job("py-job", ns, propagation_policy="Background")
core.delete_collection_namespaced_secret(ns)
print("done")
