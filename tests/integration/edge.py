"""The edge of ``docker/compose.yaml`` on this machine: a real nginx running
``docker/nginx/edge.conf`` verbatim (only its port changed) in front of Daphne processes of the
stack (tests/integration/test_edge_proxy.py, bench/service_bench.py ``--edge``)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import httpx

from tests.integration.stack import DAPHNE, ROOT, Process, Stack, free_port, wait_until

NGINX = os.environ.get("NGINX_PATH", "/usr/sbin/nginx")
EDGE_CONF = ROOT / "docker" / "nginx" / "edge.conf"
MAIN_CONF = ROOT / "docker" / "nginx" / "nginx.conf"
# The shipped main configuration's process and connection settings, used as they are.
WORKER_SETTINGS = ("worker_processes", "worker_rlimit_nofile", "worker_connections")


def worker_settings() -> dict[str, str]:
    """``docker/nginx/nginx.conf``'s values of ``WORKER_SETTINGS``."""
    text = MAIN_CONF.read_text()
    found = {name: re.search(rf"^\s*{name}\s+(\S+);", text, re.M) for name in WORKER_SETTINGS}
    missing = [name for name, match in found.items() if match is None]
    assert not missing, f"{MAIN_CONF} sets no {missing}"
    return {name: match.group(1) for name, match in found.items() if match is not None}


def start_daphne(stack: Stack, name: str) -> tuple[Process, int]:
    port = free_port()
    process = stack.spawn(
        name,
        [*DAPHNE, "-b", "127.0.0.1", "-p", str(port), "studio.asgi:application"],
    )
    wait_until(
        lambda: httpx.get(f"http://127.0.0.1:{port}/api/auth/csrf", timeout=5).status_code == 200,
        f"the {name} Daphne to answer",
        timeout=float(os.environ.get("TEST_STACK_START_SECONDS", "120")),
    )
    return process, port


def nginx_conf(tmp: Path, *, port: int, web_port: int, sockets_port: int) -> Path:
    """A top-level nginx.conf of the test's own (its paths, the shipped nginx.conf's worker
    settings) around the repository's edge.conf."""
    edge = EDGE_CONF.read_text()
    assert edge.count("listen 8000;") == 1, "edge.conf must listen on 8000 exactly once"
    (tmp / "edge.conf").write_text(edge.replace("listen 8000;", f"listen 127.0.0.1:{port};"))
    (tmp / "upstreams.conf").write_text(
        f"upstream studio_http {{ server 127.0.0.1:{web_port}; }}\n"
        f"upstream studio_sockets {{ server 127.0.0.1:{sockets_port}; }}\n"
    )
    temp = "\n".join(
        f"    {kind}_temp_path {tmp / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    # As root, nginx's workers would switch to "nobody", who cannot enter pytest's private
    # tmp directory.
    user = "user root;\n" if os.geteuid() == 0 else ""
    workers = worker_settings()
    conf = tmp / "nginx.conf"
    conf.write_text(
        f"{user}worker_processes {workers['worker_processes']};\n"
        f"worker_rlimit_nofile {workers['worker_rlimit_nofile']};\n"
        f"pid {tmp / 'nginx.pid'};\n"
        "error_log stderr notice;\n"
        f"events {{ worker_connections {workers['worker_connections']}; }}\n"
        "http {\n"
        f"{temp}\n"
        f"    include {tmp / 'upstreams.conf'};\n"
        f"    include {tmp / 'edge.conf'};\n"
        "}\n"
    )
    return conf


def start_nginx(
    stack: Stack, tmp: Path, *, web_port: int, sockets_port: int, name: str = "edge"
) -> int:
    assert Path(NGINX).exists(), f"{NGINX} is missing: run scripts/ensure-nginx.sh"
    port = free_port()
    conf = nginx_conf(tmp, port=port, web_port=web_port, sockets_port=sockets_port)
    # -e: the error log before the configuration is read (else /var/log/nginx/error.log).
    args = [NGINX, "-p", str(tmp), "-e", "stderr", "-c", str(conf)]
    checked = subprocess.run([*args, "-t"], capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stderr
    stack.spawn(name, [*args, "-g", "daemon off;"])
    wait_until(
        lambda: httpx.get(f"http://127.0.0.1:{port}/.edge/health", timeout=5).text == "ok\n",
        "nginx to answer on the edge's port",
    )
    return port
