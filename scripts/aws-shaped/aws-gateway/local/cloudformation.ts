import { AwsFault } from "../errors.ts";
import { unsupported } from "../faults.ts";
import { escapeXml, queryReply } from "../protocols.ts";
import type { LocalService } from "../service-call.ts";
import type { SeededStack } from "../types.ts";

interface Stack {
  readonly name: string;
  readonly id: string;
  /** Read at each call: the harness may learn an output (the API's URL) after the gateway starts. */
  readonly seed: SeededStack;
}

/**
 * DescribeStacks over the stacks the harness names, in CloudFormation's query-protocol XML. A stack
 * is known by its name or its stack id, and IAM authorizes DescribeStacks on the stack id ARN
 * (`…:stack/NAME/GUID`), so a policy naming that ARN matches as it does on AWS.
 */
export class CloudFormation {
  private readonly stacks: readonly Stack[];
  private readonly created = new Date().toISOString();

  constructor(
    seeds: readonly SeededStack[],
    private readonly region: string,
    private readonly accountId: string,
  ) {
    this.stacks = seeds.map((seed) => ({
      name: seed.name,
      id: seed.stackId.startsWith("arn:")
        ? seed.stackId
        : `arn:aws:cloudformation:${region}:${accountId}:stack/${seed.name}/${seed.stackId}`,
      seed,
    }));
  }

  /** The ARN IAM checks for a StackName: the stack's id, or a pattern for a stack that does not exist. */
  stackArn(stackName: string): string {
    const stack = this.find(stackName);
    if (stack) return stack.id;
    return stackName.startsWith("arn:")
      ? stackName
      : `arn:aws:cloudformation:${this.region}:${this.accountId}:stack/${stackName}/*`;
  }

  private find(stackName: string): Stack | undefined {
    return this.stacks.find((stack) => stack.name === stackName || stack.id === stackName);
  }

  readonly operations: LocalService = {
    DescribeStacks: (call) => {
      if (call.protocol.kind !== "query")
        throw unsupported(call.protocol, "CloudFormation outside its query protocol");
      const wanted = typeof call.input.StackName === "string" ? call.input.StackName : "";
      const stacks = wanted ? [this.find(wanted)] : this.stacks;
      if (stacks[0] === undefined && wanted) {
        throw new AwsFault(400, "ValidationError", `Stack with id ${wanted} does not exist`);
      }
      const members = stacks
        .filter((stack): stack is Stack => stack !== undefined)
        .map((stack) => this.member(stack))
        .join("");
      return queryReply(call.protocol.xmlns, "DescribeStacks", `<Stacks>${members}</Stacks>`);
    },
  };

  private member(stack: Stack): string {
    const outputs = Object.entries(stack.seed.outputs)
      .map(
        ([key, value]) =>
          `<member><OutputKey>${escapeXml(key)}</OutputKey><OutputValue>${escapeXml(value)}</OutputValue></member>`,
      )
      .join("");
    return (
      `<member><StackName>${escapeXml(stack.name)}</StackName><StackId>${escapeXml(stack.id)}</StackId>` +
      `<CreationTime>${this.created}</CreationTime><StackStatus>CREATE_COMPLETE</StackStatus>` +
      `<Outputs>${outputs}</Outputs></member>`
    );
  }
}
