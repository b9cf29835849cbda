// fauxqs, the SQS stand-in, as a process of its own (shared/local/stack.ts starts it): the queue then
// has its own event loop instead of sharing one with the API, the dispatcher and the worker that
// use it. Plain JavaScript, so it starts with `node` alone (never through npx, whose pid is not the
// server's). fauxqs's buildApp() binds loopback only, unlike its CLI.
//
// Usage: node fauxqs-server.mjs PORT. SIGTERM (or SIGINT) closes the server and exits 0; so does the
// parent going away (this process re-parented), which covers a parent killed with SIGKILL before
// the stack's guard could pass anything on.
import { buildApp } from "fauxqs";

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0 || port > 65_535) {
  process.stderr.write(`fauxqs-server: a port is required, got ${process.argv[2]}\n`);
  process.exit(2);
}
const app = buildApp({ logger: false, defaultRegion: "us-east-1" });
let closing = false;
const close = () => {
  if (closing) return;
  closing = true;
  app.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on("SIGTERM", close);
process.on("SIGINT", close);
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) close();
}, 500).unref();
await app.listen({ host: "127.0.0.1", port });
process.stdout.write(`fauxqs listening on 127.0.0.1:${port}\n`);
