"""Starts `edgerun serve` on a free port (port 0; the port taken is read from its
stderr) and stops it: shared by the serve tests and bench/serve_load.py."""
import os
import re
import signal
import subprocess
import threading
import time
import urllib.request


class Server:
    def __init__(self, edgerun, model, *extra, plugin_dir=None, startup_seconds=60):
        cmd = [edgerun, "serve", "-m", model, "--port", "0", *extra]
        if plugin_dir:
            cmd += ["--plugin-dir", plugin_dir]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        self.log = []
        self.url = None
        deadline = time.monotonic() + startup_seconds
        while self.url is None:
            line = self.proc.stderr.readline()
            if not line:
                raise RuntimeError(f"edgerun serve exited ({self.proc.wait()}):\n{''.join(self.log)}")
            self.log.append(line)
            if m := re.search(r"listening on (http://\S+)", line):
                self.url = m.group(1)
            if time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError("edgerun serve did not start in time:\n" + "".join(self.log))
        # Keep reading stderr so that the server never blocks on a full pipe.
        threading.Thread(target=lambda: [self.log.append(l) for l in self.proc.stderr], daemon=True).start()
        self.model_id = os.path.basename(model).removesuffix(".gguf")

    def get(self, path, timeout=10):
        with urllib.request.urlopen(self.url + path, timeout=timeout) as r:
            return r.status, r.read().decode()

    def stop(self, timeout=20):
        """SIGTERM; the exit status (None when it had to be killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return None
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
