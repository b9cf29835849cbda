// The SQS emulator as its own process, so the soak can kill it (its messages are lost) and start
// it again. fauxqs's buildApp() binds loopback only, unlike its CLI. Usage: fauxqs-server.mjs PORT
import { buildApp } from "fauxqs";

const port = Number(process.argv[2]);
const app = buildApp({ logger: false, defaultRegion: "us-east-1" });
await app.listen({ host: "127.0.0.1", port });
process.stdout.write(`fauxqs listening on ${port}\n`);
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(1);
}, 500).unref();
process.on("SIGTERM", () => void app.close().then(() => process.exit(0)));
