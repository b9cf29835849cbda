// One Lambda execution environment: loads a bundled function by its handler string, as Lambda's
// Node.js runtime does, and runs the invocations its parent sends over IPC, one at a time.
//
// Plain JavaScript on purpose: the bundle must load under plain Node, exactly as on Lambda, with no
// TypeScript loader in the process that could resolve or transform anything the bundle imports.
//
// argv: <assetDir> <handler "file.export"> <functionName> <functionArn> <memoryMb>
// parent → child: { type: "invoke", id, event, deadline (epoch ms), requestId }
// child → parent: { type: "ready" } | { type: "init-error", errorType, errorMessage }
//                 | { type: "result", id, ok: true, value } | { type: "result", id, ok: false, errorType, errorMessage, stack }
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [assetDir, handlerString, functionName, functionArn, memoryMb] = process.argv.slice(2);

/** Lambda's Node.js runtime tries these extensions, in this order, for the handler's file. */
const EXTENSIONS = [".js", ".mjs", ".cjs"];

function send(message) {
  if (process.connected) process.send(message);
}

function describe(error) {
  if (error instanceof Error) {
    return { errorType: error.name || "Error", errorMessage: error.message, stack: error.stack ?? "" };
  }
  return { errorType: "Error", errorMessage: String(error), stack: "" };
}

async function loadHandler() {
  const dot = handlerString.lastIndexOf(".");
  const file = handlerString.slice(0, dot);
  const exported = handlerString.slice(dot + 1);
  const path = EXTENSIONS.map((extension) => join(assetDir, `${file}${extension}`)).find(existsSync);
  if (!path) {
    throw Object.assign(new Error(`Cannot find module '${file}' in ${assetDir}`), {
      name: "Runtime.ImportModuleError",
    });
  }
  const module = await import(pathToFileURL(path).href);
  const handler = module[exported];
  if (typeof handler !== "function") {
    throw Object.assign(new Error(`${file}.${exported} is undefined or not exported`), {
      name: "Runtime.HandlerNotFound",
    });
  }
  return handler;
}

// The nodejs24.x runtime's context: no done/succeed/fail and no callbackWaitsForEmptyEventLoop any
// more, so code that calls them fails here as it would there.
function contextFor(message) {
  return {
    functionName,
    functionVersion: "$LATEST",
    invokedFunctionArn: functionArn,
    memoryLimitInMB: memoryMb,
    awsRequestId: message.requestId,
    logGroupName: process.env.AWS_LAMBDA_LOG_GROUP_NAME,
    logStreamName: process.env.AWS_LAMBDA_LOG_STREAM_NAME,
    getRemainingTimeInMillis: () => Math.max(0, message.deadline - Date.now()),
  };
}

// The harness gone (its IPC channel closed): nothing will invoke this environment again.
process.on("disconnect", () => process.exit(1));

try {
  const handler = await loadHandler();
  process.on("message", async (message) => {
    if (message?.type !== "invoke") return;
    try {
      const value = await handler(message.event, contextFor(message));
      send({ type: "result", id: message.id, ok: true, value: value ?? null });
    } catch (error) {
      send({ type: "result", id: message.id, ok: false, ...describe(error) });
    }
  });
  send({ type: "ready" });
} catch (error) {
  send({ type: "init-error", ...describe(error) });
  process.exitCode = 1;
  process.disconnect?.();
}
