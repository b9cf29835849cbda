import * as ec2 from "aws-cdk-lib/aws-ec2";
import type { Construct } from "constructs";
import { createLogGroup, type LogSettings } from "./log-groups.ts";
import type { Egress } from "./props.ts";

/**
 * The VPC over two AZs: private subnets with a NAT gateway route (one, or one per AZ) behind public
 * subnets, or isolated subnets only when `egress` is `none`. A gateway endpoint for DynamoDB and
 * interface endpoints for SQS and Secrets Manager keep AWS traffic off the NAT (and work without
 * one), in `endpointAzs` AZs. Flow logs (rejected traffic) go to CloudWatch.
 */
export function createNetwork(
  scope: Construct,
  options: {
    egress: Egress;
    logs: LogSettings;
    invokesLambda: boolean;
    /** The functions put notifications on an EventBridge bus. */
    publishesEvents: boolean;
    endpointAzs: 1 | 2;
  },
): ec2.Vpc {
  const { egress } = options;
  const vpc = new ec2.Vpc(scope, "Vpc", {
    maxAzs: 2,
    natGateways: egress === "nat-gateway-per-az" ? 2 : egress === "nat-gateway" ? 1 : 0,
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
  return vpc;
}
