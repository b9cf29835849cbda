import type { AddressInfo } from "node:net";
import { type Command, InvalidArgumentError } from "commander";
import type { Hono } from "hono";

interface Globals {
  url: string;
  token?: string;
  sigv4?: boolean;
  region?: string;
}

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535)
    throw new InvalidArgumentError("a port number, 0 to 65535");
  return n;
}

/**
 * `hourglass dashboard --url <api> --sigv4`: a deployment sits behind IAM, which a browser cannot
 * sign, so the page is served here on loopback and its calls are signed with the user's AWS
 * credentials on their way (or carry --token for a local server with tokens).
 */
export function addDashboardCommand(root: Command): void {
  root
    .command("dashboard")
    .description("serve the dashboard on 127.0.0.1 for --url, signing its API calls with --sigv4")
    .option("--port <port>", "local port (0 picks a free one)", port, 4000)
    .action(async (options: { port: number }, command: Command) => {
      // Loaded here, not at the top: every other command starts faster without a server in it.
      const [{ serve }, { dashboardProxy }, { sigV4Signer }, { resolveSigningRegion }] = await Promise.all([
        import("@hono/node-server"),
        import("../dashboard/proxy.ts"),
        import("../client/sigv4.ts"),
        import("../client/signing-region.ts"),
      ]);
      const globals = command.optsWithGlobals<Globals>();
      // Found before the page is served: without a region every call it makes would fail.
      const sign = globals.sigv4
        ? sigV4Signer({ region: await resolveSigningRegion(globals.url, globals.region) })
        : undefined;
      // The proxy needs its own origin, known only once the port is bound (--port 0).
      let app: Hono | undefined;
      const server = serve({
        fetch: (request) => app?.fetch(request) ?? new Response("starting", { status: 503 }),
        port: options.port,
        hostname: "127.0.0.1",
      });
      await new Promise<void>((resolve, reject) => {
        server.once("listening", resolve);
        server.once("error", reject);
      });
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      app = dashboardProxy({
        target: globals.url,
        origin,
        ...(globals.token && { token: globals.token }),
        ...(sign && { sign }),
      });
      process.stdout.write(`Hourglass dashboard for ${globals.url}: ${origin}/dashboard (Ctrl-C stops it)\n`);
      await new Promise<void>((resolve) => {
        const stop = () => server.close(() => resolve());
        process.once("SIGINT", stop);
        process.once("SIGTERM", stop);
      });
    });
}
