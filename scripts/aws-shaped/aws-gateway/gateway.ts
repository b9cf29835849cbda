import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import type { ResourceNaming } from "./authorizations.ts";
import { AwsFault, GatewayConfigError } from "./errors.ts";
import {
  accessDenied,
  internalFailure,
  missingAuthentication,
  sessionArn,
  unrecognizedClient,
  unsupported,
} from "./faults.ts";
import { CallLog, decide } from "./iam-checkpoint.ts";
import { CloudFormation } from "./local/cloudformation.ts";
import { cloudWatch } from "./local/cloudwatch.ts";
import { eventBridge } from "./local/eventbridge.ts";
import { lambda } from "./local/lambda.ts";
import { scheduler } from "./local/scheduler.ts";
import { SecretsManager } from "./local/secrets-manager.ts";
import { PolicyEvaluator } from "./policy-evaluator.ts";
import { faultReply, type Protocol, protocolFromContentType, type Reply } from "./protocols.ts";
import { ScheduleStore } from "./schedule-store.ts";
import { credentialScope, type LocalService, readServiceCall, type ServiceCall } from "./service-call.ts";
import { isServiceName, protocolOf, SERVICES, type ServiceName } from "./services.ts";
import { StandInProxy, StandInUnreachableError } from "./stand-in-proxy.ts";
import type { AwsGateway, GatewayOptions } from "./types.ts";

/**
 * One local endpoint for every AWS API the functions call. Each request is taken apart (who signed
 * it, which operation, on what), checked against the caller's role policies, recorded, and then
 * forwarded to the stand-in (DynamoDB Local, fauxqs) or answered here, in the service's own
 * protocol, so the function's SDK sees what it would see on AWS.
 */
export async function startAwsGateway(options: GatewayOptions): Promise<AwsGateway> {
  const { region, accountId } = options;
  const enforce = options.enforce ?? true;
  const forwarded: Partial<Record<ServiceName, StandInProxy>> = {
    dynamodb: new StandInProxy("dynamoEndpoint", options.dynamoEndpoint),
    sqs: new StandInProxy("sqsEndpoint", options.sqsEndpoint),
  };
  const log = new CallLog();
  const evaluator = new PolicyEvaluator(region, accountId);
  const schedules = new ScheduleStore(options.schedules ?? []);
  const secrets = new SecretsManager(options.secrets, region, accountId);
  const stacks = new CloudFormation(options.stacks ?? [], region, accountId);
  const local: Partial<Record<ServiceName, LocalService>> = {
    secretsmanager: secrets.operations,
    events: eventBridge(log),
    scheduler: scheduler(schedules, region, accountId),
    cloudformation: stacks.operations,
    monitoring: cloudWatch(options.alarms ?? [], region, accountId),
    lambda: lambda(options.invokeLambda, region, accountId),
  };
  const naming: ResourceNaming = {
    region,
    accountId,
    secretArn: (id) => secrets.arnOf(id),
    stackArn: (name) => stacks.stackArn(name),
  };

  /** Records a call the gateway refused before IAM could decide, so the refusal is seen too. */
  const refuse = (principal: string, service: string, operation: string, refusal: string) =>
    log.record({
      at: Date.now(),
      principal,
      service,
      action: service in SERVICES ? `${SERVICES[service as ServiceName].iamPrefix}:${operation}` : operation,
      resource: "",
      operation,
      decision: "ImplicitlyDenied",
      refusal,
    });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const body = await readBody(request);
    const url = new URL(request.url ?? "/", "http://gateway");
    const contentType = request.headers["content-type"];
    const fallback = protocolFromContentType(contentType);
    const scope = credentialScope(request.headers.authorization, url.searchParams);
    if (!scope) {
      refuse("(unsigned)", "", "", "no SigV4 credential scope");
      return send(response, faultReply(fallback, missingAuthentication(fallback)));
    }
    if (!isServiceName(scope.service)) {
      refuse(scope.accessKeyId, scope.service, "", `service ${scope.service} is not served`);
      return send(response, faultReply(fallback, unsupported(fallback, `the ${scope.service} service`)));
    }
    const service = scope.service;
    const delay = options.latency?.(service) ?? 0;
    const reply = async (protocol: Protocol, outcome: Reply | AwsFault) => {
      if (delay > 0) await sleep(delay);
      send(response, outcome instanceof AwsFault ? faultReply(protocol, outcome) : outcome);
    };

    const target = request.headers["x-amz-target"];
    const protocol = protocolOf(service, Array.isArray(target) ? target[0] : target, contentType);
    if (!protocol) {
      refuse(scope.accessKeyId, service, "", "request shape of no known protocol");
      return reply(fallback, unsupported(fallback, `this ${service} request (no known protocol)`));
    }
    const principal = options.principals.get(scope.accessKeyId);
    if (!principal) {
      refuse(`(unknown access key ${scope.accessKeyId})`, service, "", "UnrecognizedClient");
      return reply(protocol, unrecognizedClient(protocol));
    }
    let call: ServiceCall;
    try {
      call = readServiceCall(service, protocol, {
        method: request.method ?? "GET",
        path: url.pathname,
        query: url.searchParams,
        headers: request.headers,
        body,
      });
    } catch (error) {
      if (!(error instanceof AwsFault)) throw error;
      refuse(principal.name, service, "", error.message);
      return reply(protocol, error);
    }
    const handler = local[service]?.[call.operation];
    if (!forwarded[service] && !handler) {
      refuse(principal.name, service, call.operation, "operation not served");
      return reply(protocol, unsupported(protocol, `${service} ${call.operation}`));
    }

    const verdict = await decide(call, principal, naming, evaluator, log);
    if (verdict.kind === "unknown") {
      refuse(principal.name, service, call.operation, "operation not known to IAM");
      return reply(protocol, unsupported(protocol, `${service} ${call.operation}`));
    }
    if (verdict.kind === "failed") {
      refuse(principal.name, service, call.operation, verdict.error.message);
      return reply(protocol, internalFailure(verdict.error.message));
    }
    if (verdict.refused && enforce) {
      const { authorization, decision } = verdict.refused;
      const who = sessionArn(principal.arn, principal.name);
      return reply(
        protocol,
        accessDenied(service, protocol, who, authorization.action, authorization.resource, decision),
      );
    }

    if (handler) {
      let outcome: Reply | AwsFault;
      try {
        outcome = await handler(call, principal);
      } catch (error) {
        if (!(error instanceof AwsFault)) throw error;
        outcome = error;
      }
      return reply(protocol, outcome);
    }
    const proxy = forwarded[service];
    if (!proxy || protocol.kind !== "json") {
      // fauxqs speaks only SQS's JSON protocol; a query-protocol call is authorized, then refused.
      return reply(protocol, unsupported(protocol, `${service} over the ${protocol.kind} protocol`));
    }
    if (delay > 0) await sleep(delay);
    try {
      await proxy.forward(
        request.method ?? "POST",
        `${url.pathname}${url.search}`,
        request.headers,
        body,
        response,
      );
    } catch (error) {
      if (!(error instanceof StandInUnreachableError)) throw error;
      send(response, faultReply(protocol, new AwsFault(503, "ServiceUnavailable", error.message)));
    }
  }

  const server = http.createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (response.headersSent) return response.destroy(error as Error);
      const fallback = protocolFromContentType(request.headers["content-type"]);
      send(response, faultReply(fallback, internalFailure(`aws gateway: ${(error as Error).message}`)));
    });
  });
  // The SDK keeps its connections open with no idle limit of its own; a server closing an idle one
  // as a call goes out on it fails that call. A minute outlasts the gaps of a running function.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  // Long polls (ReceiveMessage, up to 20 s) stay open as long as the stand-in keeps them.
  server.requestTimeout = 0;

  await new Promise<void>((resolve, reject) => {
    server.once("error", (error) => reject(new GatewayConfigError("port", error.message)));
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    calls: () => log.calls(),
    denied: () => log.denied(),
    published: () => log.published(),
    scheduleState: (group, name) => schedules.state(group, name),
    onScheduleChange: (listener) => schedules.onChange(listener),
    stop: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      for (const proxy of Object.values(forwarded)) proxy.close();
    },
  };
}

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)));
    request.on("error", reject);
  });
}

function send(response: ServerResponse, reply: Reply): void {
  const body = typeof reply.body === "string" ? Buffer.from(reply.body) : reply.body;
  response.writeHead(reply.status, { ...reply.headers, "content-length": body.byteLength });
  response.end(body);
}
