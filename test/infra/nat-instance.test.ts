import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { NAT_BOOT_COMMANDS } from "../../infra/construct/nat-instance.ts";
import { HourglassStack } from "../../infra/stacks/hourglass-stack.ts";

// The lean profile's NAT instance as the template builds it. Bundling is skipped (test/infra/synth
// bundles); whether webhooks reach the internet through it is for a deployment to show.
const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
const stack = new HourglassStack(app, "Lean", {
  env: { account: "111111111111", region: "eu-west-1" },
  hourglass: { profile: "lean" },
});
const template = Template.fromStack(stack);
const hourglass = stack.hourglass;
const instance = hourglass.nat!.gatewayInstances[0]!;
const logicalId = (construct: { node: { defaultChild?: unknown } }) =>
  stack.getLogicalId(construct.node.defaultChild as never);
const resource = template.toJSON().Resources[logicalId(instance)] as {
  Properties: Record<string, unknown>;
};

describe("the NAT instance (egress: nat-instance)", () => {
  it("admits only the functions, on the ports they send on, and nothing from the internet", () => {
    const natGroup = JSON.stringify((resource.Properties.SecurityGroupIds as unknown[])[0]).match(
      /"(HourglassVpcNatSecurityGroup\w+)"/,
    )![1];
    const group = template.toJSON().Resources[natGroup!];
    expect(group.Properties.SecurityGroupIngress ?? []).toEqual([]);
    const ingress = Object.values(template.findResources("AWS::EC2::SecurityGroupIngress"))
      .map((r) => r.Properties)
      .filter((p) => JSON.stringify(p.GroupId).includes(natGroup!));
    const source = (p: Record<string, unknown>) =>
      JSON.stringify(p.SourceSecurityGroupId).match(/Hourglass(Api|Dispatcher|Worker)SecurityGroup/)![1];
    expect(ingress.map((p) => `${source(p)}:${p.FromPort}-${p.ToPort}`).sort()).toEqual([
      "Api:443-443",
      "Dispatcher:443-443",
      "Worker:443-443",
      "Worker:80-80",
    ]);
    for (const p of ingress) expect(p.CidrIp).toBeUndefined();
  });

  it("runs Amazon Linux 2023 on arm64 from AWS's public parameter, IMDSv2 only, root volume encrypted", () => {
    const image = JSON.stringify(resource.Properties.ImageId).match(/"Ref":"(\w+)"/)![1]!;
    expect(template.toJSON().Parameters[image].Default).toMatch(
      /^\/aws\/service\/ami-amazon-linux-latest\/al2023-ami-kernel-[\d.]+-arm64$/,
    );
    expect(resource.Properties.BlockDeviceMappings).toEqual([
      { DeviceName: "/dev/xvda", Ebs: expect.objectContaining({ Encrypted: true, VolumeType: "gp3" }) },
    ]);
    const templates = Object.values(template.findResources("AWS::EC2::LaunchTemplate"));
    expect(templates).toHaveLength(1);
    expect(templates[0]!.Properties.LaunchTemplateData.MetadataOptions.HttpTokens).toBe("required");
    // Named by CloudFormation: a fixed name would collide with the next stack in the region.
    expect(templates[0]!.Properties.LaunchTemplateName).toBeUndefined();
  });

  it("is rebooted by an alarm when its status check fails", () => {
    const alarm = hourglass.alarms.natInstanceStatus!;
    const props = template.toJSON().Resources[logicalId(alarm)].Properties;
    expect(props.MetricName).toBe("StatusCheckFailed_Instance");
    expect(props.Dimensions).toEqual([{ Name: "InstanceId", Value: { Ref: logicalId(instance) } }]);
    expect(JSON.stringify(props.AlarmActions)).toContain(":automate:");
    expect(JSON.stringify(props.AlarmActions)).toContain(":ec2:reboot");
  });

  it("boots with a script that bash parses, retries the package install, and keeps its rules over a reboot", () => {
    const userData = (resource.Properties.UserData as { "Fn::Base64": string })["Fn::Base64"];
    expect(userData).toBe(`#!/bin/bash\n${NAT_BOOT_COMMANDS.join("\n")}`);
    const file = join(mkdtempSync(join(tmpdir(), "hg-nat-")), "boot.sh");
    writeFileSync(file, userData);
    execFileSync("bash", ["-n", file]);
    // `service` is not on Amazon Linux 2023; the enabled iptables service loads this file at boot.
    expect(userData).not.toMatch(/\bservice iptables save\b/);
    expect(userData).toMatch(/iptables-save > \/etc\/sysconfig\/iptables/);
    expect(userData).toMatch(/systemctl enable --now iptables/);
    expect(userData).toMatch(/for attempt in \$\(seq \d+\); do dnf install -y iptables-services && break/);
  });
});
