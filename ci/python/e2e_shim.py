"""pytest plugin: the `e2e_test.base` module the clients' packaged live-cluster tests import.

The `kubernetes` and `kubernetes_asyncio` wheels ship live tests (`dynamic/*test*.py`) that
import `<package>.e2e_test.base`, which the wheels do not contain. This provides its one
function, `get_e2e_configuration()`, reading the cluster from $KUBECONFIG like upstream's does
from the default kubeconfig. Load with `pytest -p e2e_shim` (this directory on PYTHONPATH).
"""

import asyncio
import importlib
import os
import sys
import types


def _sync_configuration():
    from kubernetes import client, config

    c = client.Configuration()
    config.load_kube_config(config_file=os.environ.get("KUBECONFIG"), client_configuration=c)
    return c


def _async_configuration(package):
    def load():
        client = importlib.import_module(package + ".client")
        config = importlib.import_module(package + ".config")
        c = client.Configuration()
        asyncio.run(config.load_kube_config(config_file=os.environ.get("KUBECONFIG"), client_configuration=c))
        return c

    return load


def _register(package, loader):
    try:
        importlib.import_module(package)
    except ImportError:
        return
    pkg = types.ModuleType(package + ".e2e_test")
    pkg.__path__ = []
    base = types.ModuleType(package + ".e2e_test.base")
    base.get_e2e_configuration = loader
    pkg.base = base
    sys.modules[pkg.__name__] = pkg
    sys.modules[base.__name__] = base


_register("kubernetes", _sync_configuration)
_register("kubernetes.aio", _async_configuration("kubernetes.aio"))
_register("kubernetes_asyncio", _async_configuration("kubernetes_asyncio"))
