/**
 * The layers of `shared/`, lowest first. A module may import its own layer's folder and any layer
 * below it, never one above: types sit under the engine, the journal and the transport, which sit
 * under the services, which sit under the HTTP app and the entry points. `npm run deps` checks it,
 * and `npm test` runs that script, so an upward or circular import fails the build.
 *
 * Folders in the same layer do not import one another either (engine ↔ journal would be a knot):
 * each pattern below is one folder, and only strictly lower layers are reachable.
 */
const LAYERS = [
  // 0: shapes and utilities every layer may use, then the DynamoDB toolkit every store writes through.
  ["shared/model/", "shared/(errors|config|logger|aws|ids|resources|secrets|webhook-secret)\\.ts$"],
  ["shared/dynamo/"],
  // 1: stores and transports. They know the shapes, not the flows.
  ["shared/engine/", "shared/journal/", "shared/leases/", "shared/transport/"],
  // 2: what the flows call into.
  ["shared/handlers/", "shared/metrics-store/", "shared/limits/", "shared/notifications/"],
  // 3: the event flows (intake, dispatch, work).
  ["shared/events/"],
  // 4: features built on events.
  ["shared/ledger/", "shared/schedules/"],
  // 5: the composition root, then what runs it in-process.
  ["shared/(hourglass|metrics)\\.ts$"],
  ["shared/local/"],
  // 6: the dashboard page, then the HTTP app that mounts it.
  ["shared/dashboard/"],
  ["shared/http/"],
  // 7: callers of the API, then the entry points and the CDK app, then the scripts that run them.
  ["shared/client/"],
  ["shared/cli/"],
  ["functions/", "infra/"],
  ["scripts/"],
];

const forbidden = [
  {
    name: "no-circular",
    severity: "error",
    comment: "A cycle means two modules cannot be read (or changed) one without the other.",
    from: {},
    to: { circular: true },
  },
];

LAYERS.forEach((layer, i) => {
  const above = LAYERS.slice(i + 1).flat();
  for (const folder of layer) {
    const siblings = layer.filter((other) => other !== folder);
    const unreachable = [...above, ...siblings];
    if (unreachable.length === 0) continue;
    forbidden.push({
      name: `layer-${i}-points-down`,
      severity: "error",
      comment: `${folder} may import only its own folder and the layers below it.`,
      from: { path: `^${folder}` },
      to: { path: unreachable.map((p) => `^${p}`) },
    });
  }
});

// The typed client is a package of its own (@hourglass/client): nothing of the server may reach
// it, or it would not install elsewhere. The server imports it, never the other way round.
forbidden.push({
  name: "client-package-stands-alone",
  severity: "error",
  comment: "packages/client may import only its own files, Node's modules and its packages.",
  from: { path: "^packages/client/" },
  to: { pathNot: "^packages/client/|(^|/)node_modules/", dependencyTypesNot: ["core"] },
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden,
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^node_modules|^cdk\\.out|^shared/dashboard/ui/|^packages/client/dist/)" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".tsx", ".js", ".mjs"] },
  },
};
