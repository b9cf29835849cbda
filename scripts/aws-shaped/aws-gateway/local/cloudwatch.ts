import { unsupported } from "../faults.ts";
import { jsonReply } from "../protocols.ts";
import type { LocalService } from "../service-call.ts";

/**
 * The three CloudWatch operations the operator commands and Powertools make, answered as an
 * account with the harness's alarms, all in state OK, and no metric data. Only the JSON 1.0
 * protocol the SDK in this repository speaks is served.
 */
export function cloudWatch(alarms: readonly string[], region: string, accountId: string): LocalService {
  const created = Date.now() / 1000;
  const json = <T>(protocol: Parameters<typeof jsonReply>[0], value: T) => {
    if (protocol.kind !== "json") throw unsupported(protocol, "CloudWatch outside its JSON 1.0 protocol");
    return jsonReply(protocol, value);
  };
  return {
    DescribeAlarms: (call) => {
      const names = Array.isArray(call.input.AlarmNames)
        ? new Set(call.input.AlarmNames as unknown[])
        : undefined;
      const prefix = typeof call.input.AlarmNamePrefix === "string" ? call.input.AlarmNamePrefix : "";
      const state = call.input.StateValue;
      const matching = alarms.filter(
        (name) => (!names || names.has(name)) && name.startsWith(prefix) && (!state || state === "OK"),
      );
      return json(call.protocol, {
        MetricAlarms: matching.map((name) => ({
          AlarmName: name,
          AlarmArn: `arn:aws:cloudwatch:${region}:${accountId}:alarm:${name}`,
          StateValue: "OK",
          StateReason: "Threshold Crossed: no datapoints were received",
          StateUpdatedTimestamp: created,
          ActionsEnabled: true,
        })),
        CompositeAlarms: [],
      });
    },
    GetMetricData: (call) => {
      const queries = Array.isArray(call.input.MetricDataQueries)
        ? (call.input.MetricDataQueries as unknown[])
        : [];
      return json(call.protocol, {
        MetricDataResults: queries.map((query) => {
          const id = String((query as Record<string, unknown> | null)?.Id ?? "");
          return { Id: id, Label: id, Timestamps: [], Values: [], StatusCode: "Complete" };
        }),
        Messages: [],
      });
    },
    PutMetricData: (call) => json(call.protocol, {}),
  };
}
