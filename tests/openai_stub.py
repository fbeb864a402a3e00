"""A scripted OpenAI-style chat endpoint on loopback, for command-line runs that need a model which
writes programs (a random tiny model writes none, so nothing would reach the evaluator):
``/v1/chat/completions`` answers every request with ``n`` copies of ``script(messages)``."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ScriptedEndpoint:
    """``with ScriptedEndpoint(script, delay_s) as api_base:`` serves until the block ends."""

    def __init__(self, script, delay_s: float = 0.0):
        self.script, self.delay_s, self.requests = script, delay_s, 0
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.requests += 1
                time.sleep(endpoint.delay_s)
                text = endpoint.script(body["messages"])
                reply = json.dumps(
                    {
                        "id": f"stub-{endpoint.requests}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body["model"],
                        "choices": [
                            {
                                "index": i,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": "stop",
                            }
                            for i in range(body.get("n") or 1)
                        ],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    def __enter__(self) -> str:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
