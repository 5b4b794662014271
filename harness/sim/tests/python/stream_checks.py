"""pods/exec and pods/portforward through the official Python `kubernetes` client's own
`stream`/`portforward` helpers, and the older channel subprotocols through `websocket-client`.

Run by tests/streaming.rs with KUBECONFIG set and pod `scripted` Running in `default`.
Exits non-zero with a message on the first failed check; prints one line per passed check.
"""
import base64
import json
import select
import ssl
import sys
import time

import websocket
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.stream import portforward, stream

POD = "scripted"


def check(cond, what):
    if not cond:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"ok: {what}")


def run(v1, command, **kw):
    args = dict(stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False)
    args.update(kw)
    return stream(v1.connect_get_namespaced_pod_exec, POD, "default", command=command, **args)


def exec_checks(v1):
    out = stream(v1.connect_get_namespaced_pod_exec, POD, "default", command=["cat", "/etc/motd"],
                 stderr=True, stdin=False, stdout=True, tty=False)
    check(out == "scripted motd\n", f"scripted stdout: {out!r}")

    ws = run(v1, ["migrate"])
    ws.run_forever(timeout=10)
    check(ws.read_stderr() == "migration failed\n", "scripted stderr")
    check(ws.returncode == 2, f"exit code 2 propagated ({ws.returncode})")
    check(ws.subprotocol == "v5.channel.k8s.io", f"v5 negotiated ({ws.subprotocol})")

    ws = run(v1, ["/bin/sh", "-c", "sleep 0.2; exit 3"])
    ws.run_forever(timeout=10)
    check(ws.returncode == 3, "sh -c 'sleep; exit 3' exits 3")

    ws = run(v1, ["cat"], stdin=True)
    ws.write_stdin("line one\n")
    line = ws.readline_stdout(timeout=5)
    check(line == "line one", f"stdin echoed by cat ({line!r})")
    ws.close_channel(0)
    ws.run_forever(timeout=10)
    check(not ws.is_open() and ws.returncode == 0, "closing stdin (v5 close signal) ends cat with 0")

    ws = run(v1, ["ls", "/"])
    ws.run_forever(timeout=10)
    err = json.loads(ws.read_channel(3))
    check(err["status"] == "Failure" and err["reason"] == "InternalError"
          and "no script for the command" in err["message"], f"unscripted command: {err}")

    try:
        stream(v1.connect_get_namespaced_pod_exec, POD, "default", command=["true"], container="nope",
               stderr=True, stdin=False, stdout=True, tty=False)
        check(False, "unknown container refused")
    except ApiException as e:
        # The client turns a refused handshake into ApiException(status=0) with the response.
        check("Handshake status 400" in e.reason and "container nope is not valid for pod scripted" in e.reason, f"unknown container: {e.reason}")


def older_protocols(v1):
    """`v4.channel.k8s.io` straight from the kubelet and the pre-v4 base64 text protocol."""
    cfg = client.Configuration.get_default_copy()
    url = cfg.host.replace("https://", "wss://") + f"/api/v1/namespaces/default/pods/{POD}/exec?command=migrate&stdout=true&stderr=true"
    auth = cfg.api_key.get("authorization") or cfg.api_key.get("BearerToken")
    if not auth.startswith("Bearer"):
        auth = "Bearer " + auth
    sslopt = {"ca_certs": cfg.ssl_ca_cert, "cert_reqs": ssl.CERT_REQUIRED}
    def frames(protocol):
        ws = websocket.create_connection(url, header=[f"Authorization: {auth}"], subprotocols=[protocol], sslopt=sslopt)
        got = []
        try:
            while True:
                op, data = ws.recv_data(control_frame=False)
                if op == websocket.ABNF.OPCODE_CLOSE:
                    break
                got.append(data)
        except websocket.WebSocketConnectionClosedException:
            pass
        return ws.subprotocol, got
    proto, got = frames("v4.channel.k8s.io")
    status = json.loads([g for g in got if g[:1] == b"\x03"][0][1:])
    check(proto == "v4.channel.k8s.io" and status["details"]["causes"][0] == {"reason": "ExitCode", "message": "2"}
          and status["message"] == "command terminated with non-zero exit code: error executing command [migrate], exit code 2",
          f"v4 status from the kubelet: {status}")
    proto, got = frames("base64.channel.k8s.io")
    stderr = [base64.b64decode(g[1:]) for g in got if g[:1] == b"2" and len(g) > 1]
    errors = [base64.b64decode(g[1:]).decode() for g in got if g[:1] == b"3" and len(g) > 1]
    check(proto == "base64.channel.k8s.io" and stderr == [b"migration failed\n"], f"base64 stderr: {got}")
    check(errors and errors[0].startswith("command terminated with non-zero exit code"), f"pre-v4 plain-text error: {errors}")


def portforward_checks(v1):
    pf = portforward(v1.connect_get_namespaced_pod_portforward, POD, "default", ports="7000,8080,9")
    s = pf.socket(7000)
    s.setblocking(True)
    s.sendall(b"hello port 7000")
    got = b""
    deadline = time.time() + 10
    while got != b"hello port 7000" and time.time() < deadline:
        r, _, _ = select.select([s], [], [], 1)
        if r:
            got += s.recv(1024)
    check(got == b"hello port 7000", f"echo through port 7000 ({got!r})")
    h = pf.socket(8080)
    h.setblocking(True)
    h.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    resp = b""
    while not resp.endswith(b"ok\n") and time.time() < deadline:
        r, _, _ = select.select([h], [], [], 1)
        if r:
            chunk = h.recv(4096)
            if not chunk:
                break
            resp += chunk
    check(resp.startswith(b"HTTP/1.1 200 OK\r\n") and resp.endswith(b"ok\n"), f"HTTP listener on 8080 ({resp!r})")
    closed = pf.socket(9)
    closed.setblocking(True)
    check(closed.recv(1024) == b"", "closed port: socket closed")
    err = pf.error(9) or ""
    check("error forwarding port 9 to pod" in err and "connection refused" in err, f"closed port error: {err!r}")
    s.close()
    h.close()


def main():
    config.load_kube_config()
    v1 = client.CoreV1Api()
    exec_checks(v1)
    older_protocols(v1)
    portforward_checks(v1)


if __name__ == "__main__":
    main()
