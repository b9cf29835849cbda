import { Duration } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as actions from "aws-cdk-lib/aws-cloudwatch-actions";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import type * as sns from "aws-cdk-lib/aws-sns";
import type { Construct } from "constructs";

/** The cheapest arm64 instance: enough for the webhooks and AWS calls of a small deployment. */
export const NAT_INSTANCE_TYPE = "t4g.nano";

/** `dnf install` attempts (5 s apart) before the boot script gives up and says so in its log. */
const INSTALL_ATTEMPTS = 60;

/**
 * What the instance runs at its first boot: AWS's NAT instance recipe for Amazon Linux 2023
 * (docs.aws.amazon.com/vpc/latest/userguide/work-with-nat-instances.html), with two faults of the
 * copy in aws-cdk-lib fixed. Its one `yum install` can lose a race with cloud-init's own dnf and
 * leave the instance without NAT (aws/aws-cdk#36717), so the install is retried; and its
 * `service iptables save` needs the `service` command, which AL2023 does not install, so the rules
 * are written with `iptables-save` to the file the enabled iptables service loads at every boot: a
 * reboot (the status-check alarm's action, or EC2's automatic recovery) keeps the NAT working.
 */
export const NAT_BOOT_COMMANDS: readonly string[] = [
  "set -euo pipefail",
  `for attempt in $(seq ${INSTALL_ATTEMPTS}); do dnf install -y iptables-services && break; sleep 5; done`,
  "rpm -q iptables-services",
  'echo "net.ipv4.ip_forward=1" > /etc/sysctl.d/90-hourglass-nat.conf',
  "sysctl -p /etc/sysctl.d/90-hourglass-nat.conf",
  "systemctl enable --now iptables",
  "IFACE=$(ip route show default | awk '{print $5; exit}')",
  'iptables -t nat -A POSTROUTING -o "$IFACE" -j MASQUERADE',
  "iptables -F FORWARD",
  "iptables-save > /etc/sysconfig/iptables",
];

/**
 * One NAT instance in the first public subnet (`Vpc` with `natGateways: 1`), from the latest
 * Amazon Linux 2023 arm64 AMI (an SSM public parameter, resolved at deploy time: no lookup, so
 * `cdk synth` stays offline). It admits nothing by default: `admitToNat` opens the ports the
 * functions send on.
 */
export function natInstanceProvider(): ec2.NatInstanceProviderV2 {
  return ec2.NatProvider.instanceV2({
    instanceType: new ec2.InstanceType(NAT_INSTANCE_TYPE),
    machineImage: ec2.MachineImage.latestAmazonLinux2023({ cpuType: ec2.AmazonLinuxCpuType.ARM_64 }),
    defaultAllowedTraffic: ec2.NatTrafficDirection.OUTBOUND_ONLY,
    userData: bootScript(),
  });
}

function bootScript(): ec2.UserData {
  const userData = ec2.UserData.forLinux();
  userData.addCommands(...NAT_BOOT_COMMANDS);
  return userData;
}

/**
 * Finishes the NAT instances once the VPC has placed them: IMDSv2 only (the
 * instance's role has no policies, but nothing on it needs IMDSv1), an encrypted root volume, and
 * an alarm that reboots an instance whose status check fails (EC2's simplified automatic recovery,
 * on by default for t4g, already moves it to new hardware when the host fails).
 */
export function finishNatInstances(
  scope: Construct,
  nat: ec2.NatInstanceProviderV2,
  topic: sns.ITopic | undefined,
): cloudwatch.Alarm[] {
  return nat.gatewayInstances.map((instance, i) => {
    const cfn = instance.node.defaultChild as ec2.CfnInstance;
    cfn.blockDeviceMappings = [
      {
        deviceName: "/dev/xvda",
        ebs: { encrypted: true, volumeType: "gp3", volumeSize: 8, deleteOnTermination: true },
      },
    ];
    // A launch template CloudFormation names (InstanceRequireImdsv2Aspect would name it after the
    // construct id, the same in every stack of the account and region).
    const template = new ec2.CfnLaunchTemplate(instance, "MetadataOptions", {
      launchTemplateData: { metadataOptions: { httpTokens: "required", httpPutResponseHopLimit: 1 } },
    });
    cfn.launchTemplate = { launchTemplateId: template.ref, version: template.attrLatestVersionNumber };
    const alarm = new cloudwatch.Alarm(scope, i === 0 ? "NatInstanceStatus" : `NatInstanceStatus${i}`, {
      alarmDescription:
        "The NAT instance fails its status check: webhooks and AWS calls from the functions are failing and being retried. The alarm reboots it.",
      metric: new cloudwatch.Metric({
        namespace: "AWS/EC2",
        metricName: "StatusCheckFailed_Instance",
        dimensionsMap: { InstanceId: instance.instanceId },
        statistic: "Maximum",
        period: Duration.minutes(1),
      }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 3,
      treatMissingData: cloudwatch.TreatMissingData.MISSING,
    });
    alarm.addAlarmAction(new actions.Ec2Action(actions.Ec2InstanceAction.REBOOT));
    if (topic) alarm.addAlarmAction(new actions.SnsAction(topic));
    return alarm;
  });
}

/** Lets these security groups send on these ports through the NAT instance, and nothing else. */
export function admitToNat(
  nat: ec2.NatInstanceProviderV2,
  groups: readonly ec2.ISecurityGroup[],
  ports: readonly number[],
): void {
  for (const group of groups)
    for (const port of ports)
      nat.connections.allowFrom(group, ec2.Port.tcp(port), "Hourglass function out through the NAT");
}
