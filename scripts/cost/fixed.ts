import { UnpricedResourceError } from "./errors.ts";
import {
  ASSUMPTIONS,
  EC2_INSTANCE_HOUR,
  HOURS_PER_MONTH,
  PRICES,
  REDIS_OVER_VALKEY,
  SECONDS_PER_MONTH,
  TERMS,
  VALKEY_NODE_HOUR,
} from "./prices.ts";
import { type CfnResource, type CfnTemplate, prop, resourcesOf, text } from "./template.ts";

/** One line of a bill: what, how many, and dollars a month. */
export interface Line {
  readonly item: string;
  readonly detail: string;
  readonly usd: number;
}

const hourly = (usdPerHour: number) => usdPerHour * HOURS_PER_MONTH;
const line = (item: string, detail: string, usd: number): Line => ({ item, detail, usd });
const money = (usd: number) => `$${usd.toFixed(usd < 1 ? 4 : 2)}`;

/** Subnets whose instances get a public IPv4 address at launch. */
function publicSubnets(template: CfnTemplate): Set<string> {
  return new Set(
    Object.entries(template.Resources)
      .filter(([, r]) => r.Type === "AWS::EC2::Subnet" && prop<boolean>(r, "MapPublicIpOnLaunch") === true)
      .map(([id]) => id),
  );
}

const refOf = (value: unknown): string | undefined =>
  value && typeof value === "object" ? (value as { Ref?: string }).Ref : undefined;

function instanceHasPublicIp(instance: CfnResource, publicIds: Set<string>): boolean {
  const interfaces = prop<{ AssociatePublicIpAddress?: boolean; SubnetId?: unknown }[]>(
    instance,
    "NetworkInterfaces",
  );
  if (interfaces?.length) return interfaces.some((i) => i.AssociatePublicIpAddress === true);
  const subnet = refOf(prop(instance, "SubnetId"));
  return subnet !== undefined && publicIds.has(subnet);
}

function natAndInstances(template: CfnTemplate): Line[] {
  const lines: Line[] = [];
  const gateways = resourcesOf(template, "AWS::EC2::NatGateway").length;
  if (gateways > 0)
    lines.push(
      line(
        "NAT gateways",
        `${gateways} × ${money(PRICES.natGatewayHour.usd)} an hour`,
        gateways * hourly(PRICES.natGatewayHour.usd),
      ),
    );
  const publicIds = publicSubnets(template);
  const instances = resourcesOf(template, "AWS::EC2::Instance");
  for (const instance of instances) {
    const type = String(prop(instance, "InstanceType") ?? "");
    const price = EC2_INSTANCE_HOUR[type];
    if (!price) throw new UnpricedResourceError("AWS::EC2::Instance", `of type ${type || "(unset)"}`);
    lines.push(line(`EC2 instance (${type})`, `${money(price.usd)} an hour`, hourly(price.usd)));
    const mappings = prop<{ Ebs?: { VolumeSize?: number } }[]>(instance, "BlockDeviceMappings") ?? [];
    const gb =
      mappings.reduce((sum, m) => sum + (m.Ebs?.VolumeSize ?? 0), 0) || TERMS.defaultRootVolumeGb.usd;
    lines.push(line(`EBS root volume (${type})`, `${gb} GB gp3`, gb * PRICES.ebsGp3GbMonth.usd));
  }
  const eips = resourcesOf(template, "AWS::EC2::EIP").length;
  const autoAssigned = instances.filter((i) => instanceHasPublicIp(i, publicIds)).length;
  // An Elastic IP associated with an instance is that instance's address: not counted twice.
  const associated = resourcesOf(template, "AWS::EC2::EIP").filter(
    (e) => prop(e, "InstanceId") !== undefined,
  ).length;
  const addresses = eips + autoAssigned - Math.min(associated, autoAssigned);
  if (addresses > 0)
    lines.push(
      line(
        "public IPv4 addresses",
        `${addresses} × ${money(PRICES.publicIpv4Hour.usd)} an hour`,
        addresses * hourly(PRICES.publicIpv4Hour.usd),
      ),
    );
  return lines;
}

function endpoints(template: CfnTemplate): Line[] {
  const lines: Line[] = [];
  for (const endpoint of resourcesOf(template, "AWS::EC2::VPCEndpoint")) {
    if (prop(endpoint, "VpcEndpointType") !== "Interface") continue; // gateway endpoints are free
    const service = text(prop(endpoint, "ServiceName")).split(".").at(-1) ?? "?";
    const azs = prop<unknown[]>(endpoint, "SubnetIds")?.length ?? 1;
    lines.push(
      line(
        `interface endpoint (${service})`,
        `${azs} AZ × ${money(PRICES.interfaceEndpointHour.usd)} an hour`,
        azs * hourly(PRICES.interfaceEndpointHour.usd),
      ),
    );
  }
  return lines;
}

function nodeHour(nodeType: string, engine: string): number {
  const valkey = VALKEY_NODE_HOUR[nodeType];
  if (!valkey) throw new UnpricedResourceError("AWS::ElastiCache::ReplicationGroup", `node type ${nodeType}`);
  return engine === "valkey" ? valkey.usd : valkey.usd * REDIS_OVER_VALKEY;
}

/** Serverless caches bill their data at least at the engine's minimum: the minimum is fixed. */
export function serverlessMinimum(cache: CfnResource): { gb: number; gbHour: number } {
  const valkey = String(prop(cache, "Engine") ?? "") === "valkey";
  return valkey
    ? { gb: TERMS.serverlessValkeyMinimumGb.usd, gbHour: PRICES.serverlessValkeyGbHour.usd }
    : { gb: TERMS.serverlessRedisMinimumGb.usd, gbHour: PRICES.serverlessRedisGbHour.usd };
}

function caches(template: CfnTemplate): Line[] {
  const lines: Line[] = [];
  for (const group of resourcesOf(template, "AWS::ElastiCache::ReplicationGroup")) {
    const nodeType = String(prop(group, "CacheNodeType") ?? "");
    const engine = String(prop(group, "Engine") ?? "redis");
    const groups = prop<number>(group, "NumNodeGroups");
    const nodes =
      prop<number>(group, "NumCacheClusters") ??
      (groups ?? 1) * (1 + (prop<number>(group, "ReplicasPerNodeGroup") ?? 0));
    const perHour = nodeHour(nodeType, engine);
    lines.push(
      line(
        `cache nodes (${nodeType}, ${engine})`,
        `${nodes} × ${money(perHour)} an hour`,
        nodes * hourly(perHour),
      ),
    );
  }
  for (const cache of resourcesOf(template, "AWS::ElastiCache::ServerlessCache")) {
    const { gb, gbHour } = serverlessMinimum(cache);
    lines.push(
      line(
        `serverless cache (${String(prop(cache, "Engine"))}), data minimum`,
        `${gb * 1000} MB × ${money(gbHour)} a GB-hour`,
        gb * hourly(gbHour),
      ),
    );
  }
  return lines;
}

/** Alarms bill per metric they evaluate; a metric-math alarm evaluates each of its metrics. */
function alarms(template: CfnTemplate): Line[] {
  let standard = 0;
  let high = 0;
  for (const alarm of resourcesOf(template, "AWS::CloudWatch::Alarm")) {
    const queries = prop<{ MetricStat?: { Period?: number } }[]>(alarm, "Metrics");
    const periods = queries
      ? queries.filter((q) => q.MetricStat).map((q) => q.MetricStat?.Period ?? 60)
      : [prop<number>(alarm, "Period") ?? 60];
    for (const period of periods)
      if (period < 60) high++;
      else standard++;
  }
  const lines: Line[] = [];
  if (standard > 0)
    lines.push(
      line(
        "alarm metrics",
        `${standard} × ${money(PRICES.alarmMetricMonth.usd)}`,
        standard * PRICES.alarmMetricMonth.usd,
      ),
    );
  if (high > 0)
    lines.push(
      line(
        "high-resolution alarm metrics",
        `${high} × ${money(PRICES.highResolutionAlarmMetricMonth.usd)}`,
        high * PRICES.highResolutionAlarmMetricMonth.usd,
      ),
    );
  return lines;
}

/**
 * The custom metrics (any namespace not `AWS/…`) the template's alarms and dashboards read: each
 * name and dimension set is one billed metric.
 */
export function customMetrics(template: CfnTemplate): string[] {
  const found = new Set<string>();
  for (const alarm of resourcesOf(template, "AWS::CloudWatch::Alarm")) {
    const namespace = String(prop(alarm, "Namespace") ?? "AWS/");
    if (namespace.startsWith("AWS/")) continue;
    const dims = (prop<{ Name: string; Value: unknown }[]>(alarm, "Dimensions") ?? [])
      .map((d) => `${d.Name}=${text(d.Value)}`)
      .sort();
    found.add([namespace, String(prop(alarm, "MetricName")), ...dims].join("|"));
  }
  for (const dashboard of resourcesOf(template, "AWS::CloudWatch::Dashboard")) {
    const body = JSON.parse(text(prop(dashboard, "DashboardBody"))) as {
      widgets?: { properties?: { metrics?: unknown[][] } }[];
    };
    for (const widget of body.widgets ?? []) {
      let previous: string[] = [];
      for (const row of widget.properties?.metrics ?? []) {
        // "." repeats the previous row's value in that position (CloudWatch's shorthand).
        const cells = row.filter((c) => typeof c === "string") as string[];
        const expanded = cells.map((c, i) => (c === "." ? (previous[i] ?? c) : c));
        previous = expanded;
        const [namespace, name, ...dims] = expanded;
        if (!namespace || !name || namespace.startsWith("AWS/")) continue;
        const pairs: string[] = [];
        for (let i = 0; i + 1 < dims.length; i += 2) pairs.push(`${dims[i]}=${dims[i + 1]}`);
        found.add([namespace, name, ...pairs.sort()].join("|"));
      }
    }
  }
  return [...found].sort();
}

/** The fixed monthly cost of what a template creates, whatever the volume. */
export function fixedResources(template: CfnTemplate): Line[] {
  const lines = [...natAndInstances(template), ...endpoints(template), ...caches(template)];
  const secrets = resourcesOf(template, "AWS::SecretsManager::Secret").length;
  if (secrets > 0)
    lines.push(
      line("secrets", `${secrets} × ${money(PRICES.secretMonth.usd)}`, secrets * PRICES.secretMonth.usd),
    );
  const keys = resourcesOf(template, "AWS::KMS::Key").length;
  if (keys > 0)
    lines.push(
      line(
        "KMS keys (customer managed)",
        `${keys} × ${money(PRICES.kmsKeyMonth.usd)}`,
        keys * PRICES.kmsKeyMonth.usd,
      ),
    );
  lines.push(...alarms(template));
  const dashboards = resourcesOf(template, "AWS::CloudWatch::Dashboard").length;
  if (dashboards > 0)
    lines.push(
      line(
        "dashboards",
        `${dashboards} × ${money(PRICES.dashboardMonth.usd)}`,
        dashboards * PRICES.dashboardMonth.usd,
      ),
    );
  const metrics = customMetrics(template).length;
  if (metrics > 0)
    lines.push(
      line(
        "custom metrics read by alarms and dashboards",
        `${metrics} × ${money(PRICES.customMetricMonth.usd)}`,
        metrics * PRICES.customMetricMonth.usd,
      ),
    );
  const mappings = resourcesOf(template, "AWS::Lambda::EventSourceMapping").length;
  if (mappings > 0) {
    const polls = mappings * ASSUMPTIONS.idlePollers * (SECONDS_PER_MONTH / ASSUMPTIONS.pollWaitSeconds);
    lines.push(
      line(
        "SQS long polls of Lambda's pollers",
        `${mappings} queue × ${ASSUMPTIONS.idlePollers} pollers, a ${ASSUMPTIONS.pollWaitSeconds} s poll each`,
        polls * PRICES.sqsRequest.usd,
      ),
    );
  }
  return lines;
}
