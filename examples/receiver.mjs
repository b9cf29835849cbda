import { createServer } from "node:http";
import { Webhook } from "standardwebhooks";

const hook = new Webhook(process.env.WEBHOOK_SECRET); // "whsec_…" from GET /v1/webhook-secret
createServer(async (req, res) => {
  let body = "";
  for await (const chunk of req) body += chunk;
  try {
    hook.verify(body, req.headers); // throws on a bad signature or a stale timestamp
  } catch {
    return res.writeHead(401).end();
  }
  console.log("verified", req.headers["webhook-id"], body);
  res.writeHead(204).end();
}).listen(8080);
