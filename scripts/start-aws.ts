import { Command, Option } from "commander";
import { loadCallerKeys } from "./aws-shaped/api-gateway/index.ts";
import { ACCOUNT, OPERATOR_KEY, REGION, startAwsShaped } from "./aws-shaped/harness.ts";
import { iamReport } from "./aws-shaped/iam-report.ts";

// As `npm start`: the SDK's Node 22 notice is the SDK's own switch (README, "Node versions").
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

/**
 * `npm run start:aws [-- --profile lean] [--latency aws]`: the stack `cdk deploy` would create,
 * run on this machine as AWS runs it (docs/local.md, "AWS-shaped mode").
 */
const program = new Command("start:aws")
  .addOption(
    new Option("--profile <profile>", "the construct's profile")
      .choices(["standard", "lean"])
      .default("standard"),
  )
  .addOption(
    new Option("--latency <model>", "add AWS's latencies to every AWS call and Redis round trip").choices([
      "aws",
    ]),
  )
  .option("--port <port>", "the API's port", process.env.PORT ?? "3000")
  .option("--stack <name>", "the local stack's name (for hourglass … --aws --stack)", "Hourglass")
  .option("--keys <file>", "SigV4 caller keys for the API (JSON: { accessKeyId: { secretAccessKey, arn } })")
  .option("--cdk-out <dir>", "run this cdk.out instead of synthesizing")
  .option(
    "-c, --context <name=value>",
    "synth context, as with cdk deploy (repeatable)",
    (value: string, all: string[]) => [...all, value],
    [] as string[],
  )
  .parse();

const options = program.opts<{
  profile: "standard" | "lean";
  latency?: "aws";
  port: string;
  stack: string;
  keys?: string;
  cdkOut?: string;
  context: string[];
}>();

const context = Object.fromEntries(
  options.context.map((pair) => {
    const at = pair.indexOf("=");
    if (at < 1) program.error(`-c ${pair}: expected name=value`);
    return [pair.slice(0, at), pair.slice(at + 1)];
  }),
);
const log = (line: string) => process.stdout.write(`[start:aws] ${line}\n`);

const running = await startAwsShaped({
  profile: options.profile,
  context,
  stackName: options.stack,
  port: Number(options.port),
  ...(options.latency && { latency: options.latency }),
  ...(options.keys && { keys: loadCallerKeys(options.keys) }),
  ...(options.cdkOut && { cdkOut: options.cdkOut }),
  log,
});

log(`Hourglass (${options.profile} profile${options.latency ? ", AWS latencies" : ""}) at ${running.url}`);
log(
  "call it signed, as API Gateway's IAM authorization requires (any key pair signs as an IAM user named after its key):",
);
log(
  `  AWS_ACCESS_KEY_ID=dev AWS_SECRET_ACCESS_KEY=anything AWS_REGION=${REGION} HOURGLASS_URL=${running.url} npx hourglass --sigv4 stats`,
);
log("operate it as the deployment's admin:");
log(
  `  AWS_ENDPOINT_URL=${running.awsEndpoint} AWS_ACCESS_KEY_ID=${OPERATOR_KEY.accessKeyId} AWS_SECRET_ACCESS_KEY=${OPERATOR_KEY.secretAccessKey} AWS_REGION=${REGION} npx hourglass status --aws --stack ${running.stackName}`,
);
log(`account ${ACCOUNT}; logs in .hourglass/aws-shaped/${options.profile}/logs/; Ctrl-C stops it`);

let stopping = false;
const stop = async () => {
  // A second Ctrl-C does not wait for invocations in flight (up to the functions' timeouts).
  if (stopping) process.exit(130);
  stopping = true;
  log("stopping");
  await running.stop();
  const report = iamReport(running.gateway.calls());
  process.stdout.write(`${report.text}\n`);
  // A call the template's roles do not allow would fail on AWS: the run fails too.
  process.exit(report.denied.length > 0 ? 1 : 0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
