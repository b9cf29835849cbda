import * as ec2 from "aws-cdk-lib/aws-ec2";
import type { Construct } from "constructs";
import { createLogGroup, type LogSettings } from "./log-groups.ts";
import { natInstanceProvider } from "./nat-instance.ts";
import type { Egress } from "./props.ts";

/**
 * The VPC over two AZs: private subnets with a route to a NAT gateway (one, or one per AZ) or a NAT
 * instance behind public subnets, or isolated subnets only when `egress` is `none`. A gateway
 * endpoint for DynamoDB (free) keeps its traffic off the NAT. With `interfaceEndpoints`, endpoints
 * for SQS and Secrets Manager (and EventBridge, Lambda when used) in `endpointAzs` AZs do the same
 * for those APIs, and are how they are reached at all without egress; without them the AWS APIs go
 * through the NAT. Flow logs (rejected traffic) go to CloudWatch.
 */
export function createNetwork(
  scope: Construct,
  options: {
    egress: Egress;
    logs: LogSettings;
    invokesLambda: boolean;
    /** The functions put notifications on an EventBridge bus. */
    publishesEvents: boolean;
    interfaceEndpoints: boolean;
    endpointAzs: 1 | 2;
  },
): { vpc: ec2.Vpc; nat: ec2.NatInstanceProviderV2 | undefined } {
  const { egress } = options;
  const nat = egress === "nat-instance" ? natInstanceProvider() : undefined;
  const vpc = new ec2.Vpc(scope, "Vpc", {
    maxAzs: 2,
    ...(nat && { natGatewayProvider: nat }),
    natGateways: egress === "nat-gateway-per-az" ? 2 : egress === "none" ? 0 : 1,
    subnetConfiguration:
      egress === "none"
        ? [{ name: "isolated", subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: 22 }]
        : [
            { name: "public", subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 },
            { name: "private", subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 22 },
          ],
  });
  vpc.addFlowLog("FlowLog", {
    destination: ec2.FlowLogDestination.toCloudWatchLogs(createLogGroup(scope, "FlowLogs", options.logs)),
    trafficType: ec2.FlowLogTrafficType.REJECT,
  });
  vpc.addGatewayEndpoint("DynamoDb", { service: ec2.GatewayVpcEndpointAwsService.DYNAMODB });
  if (!options.interfaceEndpoints) return { vpc, nat };
  const private_ = egress === "none" ? vpc.isolatedSubnets : vpc.privateSubnets;
  const subnets: ec2.SubnetSelection = { subnets: private_.slice(0, options.endpointAzs) };
  vpc.addInterfaceEndpoint("Sqs", { service: ec2.InterfaceVpcEndpointAwsService.SQS, subnets });
  vpc.addInterfaceEndpoint("SecretsManager", {
    service: ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER,
    subnets,
  });
  // The worker invokes the user's handler functions through the Lambda API.
  if (options.invokesLambda)
    vpc.addInterfaceEndpoint("Lambda", { service: ec2.InterfaceVpcEndpointAwsService.LAMBDA, subnets });
  // Notifications go to EventBridge (PutEvents) from every function, with or without a NAT.
  if (options.publishesEvents)
    vpc.addInterfaceEndpoint("EventBridge", {
      service: ec2.InterfaceVpcEndpointAwsService.EVENTBRIDGE,
      subnets,
    });
  return { vpc, nat };
}
