"""A webhook receiver for the outbox tests (tests/it/outbox.rs): it binds 127.0.0.1 on a free
port and prints the port, reads the endpoint's signing secret from its first line of standard
input, then verifies every delivery with the Standard Webhooks reference library
(`standardwebhooks`) and prints one JSON line per delivery: its webhook-id, whether the signature
verified, the payload, and a monotonic time. The n-th delivery gets the n-th reply of the script
given as its argument (a JSON list of [status, {header: value}]; the last one from then on)."""

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook

replies = json.loads(sys.argv[1])
count = 0


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        global count
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            payload = webhook.verify(body, headers)
            verified, error = True, None
        except Exception as e:  # the library raises its own WebhookVerificationError
            payload, verified, error = None, False, repr(e)
        status, extra = replies[min(count, len(replies) - 1)]
        count += 1
        print(json.dumps({"id": headers.get("webhook-id"), "verified": verified, "error": error, "payload": payload, "at": time.monotonic()}), flush=True)
        self.send_response(status)
        for name, value in extra.items():
            self.send_header(name, value)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_port, flush=True)
webhook = Webhook(sys.stdin.readline().strip())
server.serve_forever()
