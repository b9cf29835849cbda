import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as logs from "aws-cdk-lib/aws-logs";
import type { Construct } from "constructs";

/**
 * The VPC: private isolated subnets (plus a public one and a NAT when internet egress is on), a
 * gateway endpoint for DynamoDB and interface endpoints for SQS and Secrets Manager, so the
 * functions reach AWS without the internet. Flow logs go to CloudWatch.
 */
export function createNetwork(
  scope: Construct,
  internetEgress: boolean,
  retention: logs.RetentionDays,
  invokesLambda: boolean,
): ec2.Vpc {
  const vpc = new ec2.Vpc(scope, "Vpc", {
    maxAzs: 2,
    natGateways: internetEgress ? 1 : 0,
    subnetConfiguration: internetEgress
      ? [
          { name: "public", subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 },
          { name: "private", subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 22 },
        ]
      : [{ name: "isolated", subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: 22 }],
  });
  vpc.addFlowLog("FlowLog", {
    destination: ec2.FlowLogDestination.toCloudWatchLogs(new logs.LogGroup(scope, "FlowLogs", { retention })),
    trafficType: ec2.FlowLogTrafficType.REJECT,
  });
  vpc.addGatewayEndpoint("DynamoDb", { service: ec2.GatewayVpcEndpointAwsService.DYNAMODB });
  vpc.addInterfaceEndpoint("Sqs", { service: ec2.InterfaceVpcEndpointAwsService.SQS });
  vpc.addInterfaceEndpoint("SecretsManager", { service: ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER });
  // The worker invokes the user's handler functions through the Lambda API.
  if (invokesLambda)
    vpc.addInterfaceEndpoint("Lambda", { service: ec2.InterfaceVpcEndpointAwsService.LAMBDA });
  return vpc;
}
