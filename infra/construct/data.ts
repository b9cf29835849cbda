import { RemovalPolicy } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as elasticache from "aws-cdk-lib/aws-elasticache";
import * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import type { Construct } from "constructs";
import type { TableDefinition } from "../../shared/resources.ts";

const attribute = (a: { name: string; type: "S" | "N" }): dynamodb.Attribute => ({
  name: a.name,
  type: a.type === "S" ? dynamodb.AttributeType.STRING : dynamodb.AttributeType.NUMBER,
});

/** A table from the shared definition (the same one local provisioning uses). */
export function createTable(scope: Construct, id: string, definition: TableDefinition, production: boolean) {
  return new dynamodb.TableV2(scope, id, {
    partitionKey: attribute(definition.partitionKey),
    ...(definition.sortKey && { sortKey: attribute(definition.sortKey) }),
    billing: dynamodb.Billing.onDemand(),
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    encryption: dynamodb.TableEncryptionV2.awsManagedKey(),
    ...(definition.ttlAttribute && { timeToLiveAttribute: definition.ttlAttribute }),
    globalSecondaryIndexes: definition.indexes.map((index) => ({
      indexName: index.name,
      partitionKey: attribute(index.partitionKey),
      sortKey: attribute(index.sortKey),
      projectionType:
        index.projection === "ALL" ? dynamodb.ProjectionType.ALL : dynamodb.ProjectionType.KEYS_ONLY,
    })),
    deletionProtection: production,
    removalPolicy: production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
  });
}

export interface Cache {
  readonly resource: elasticache.CfnReplicationGroup | elasticache.CfnServerlessCache;
  /** `rediss://host:port`; the AUTH token is read from the secret at run time. */
  readonly url: string;
  readonly cluster: boolean;
  readonly securityGroup: ec2.SecurityGroup;
  readonly authSecret: secretsmanager.Secret;
}

/**
 * Valkey with TLS in transit, encryption at rest, and a security group that admits only the
 * Hourglass functions. The replication group also has AUTH and, in production, a Multi-AZ replica.
 */
export function createCache(
  scope: Construct,
  vpc: ec2.IVpc,
  subnets: ec2.SubnetSelection,
  mode: "replication-group" | "serverless",
  nodeType: string,
  production: boolean,
): Cache {
  const securityGroup = new ec2.SecurityGroup(scope, "CacheSecurityGroup", {
    vpc,
    description: "Hourglass Valkey: reachable from the Hourglass functions only",
    allowAllOutbound: false,
  });
  const authSecret = new secretsmanager.Secret(scope, "CacheAuth", {
    description: "Hourglass: Valkey AUTH token",
    generateSecretString: {
      secretStringTemplate: "{}",
      generateStringKey: "redisAuthToken",
      excludePunctuation: true,
      passwordLength: 48,
    },
    removalPolicy: production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
  });
  const subnetIds = vpc.selectSubnets(subnets).subnetIds;
  if (mode === "serverless") {
    const resource = new elasticache.CfnServerlessCache(scope, "Cache", {
      serverlessCacheName: `hourglass-${scope.node.addr.slice(0, 12)}`,
      engine: "valkey",
      majorEngineVersion: "8",
      securityGroupIds: [securityGroup.securityGroupId],
      subnetIds,
    });
    return {
      resource,
      url: `rediss://${resource.attrEndpointAddress}:${resource.attrEndpointPort}`,
      cluster: true,
      securityGroup,
      authSecret,
    };
  }
  const subnetGroup = new elasticache.CfnSubnetGroup(scope, "CacheSubnets", {
    description: "Hourglass Valkey subnets",
    subnetIds,
  });
  const resource = new elasticache.CfnReplicationGroup(scope, "Cache", {
    replicationGroupDescription: "Hourglass time index",
    engine: "valkey",
    engineVersion: "8.0",
    cacheNodeType: nodeType,
    numCacheClusters: production ? 2 : 1,
    multiAzEnabled: production,
    automaticFailoverEnabled: production,
    transitEncryptionEnabled: true,
    atRestEncryptionEnabled: true,
    authToken: authSecret.secretValueFromJson("redisAuthToken").unsafeUnwrap(),
    port: 6380,
    cacheSubnetGroupName: subnetGroup.ref,
    securityGroupIds: [securityGroup.securityGroupId],
    snapshotRetentionLimit: production ? 7 : 0,
  });
  return {
    resource,
    url: `rediss://${resource.attrPrimaryEndPointAddress}:${resource.attrPrimaryEndPointPort}`,
    cluster: false,
    securityGroup,
    authSecret,
  };
}
