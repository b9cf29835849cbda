import { RemovalPolicy } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as elasticache from "aws-cdk-lib/aws-elasticache";
import * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import type { Construct } from "constructs";
import type { TableDefinition } from "../../shared/resources.ts";
import type { HourglassOverrides } from "./props.ts";

const attribute = (a: { name: string; type: "S" | "N" }): dynamodb.Attribute => ({
  name: a.name,
  type: a.type === "S" ? dynamodb.AttributeType.STRING : dynamodb.AttributeType.NUMBER,
});

/**
 * A table from the shared definition (the same one local provisioning uses). Encrypted at rest
 * either way: the standard profile with the AWS managed key `aws/dynamodb` (its use shows in
 * CloudTrail, and DynamoDB's calls to KMS are billed as KMS requests), lean with DynamoDB's own key
 * (no KMS requests, nothing to pay; the same encryption, without the CloudTrail entries).
 */
export function createTable(
  scope: Construct,
  id: string,
  definition: TableDefinition,
  profile: { production: boolean; lean: boolean },
  overrides: HourglassOverrides["tables"] = {},
) {
  const { production } = profile;
  return new dynamodb.TableV2(scope, id, {
    billing: dynamodb.Billing.onDemand(),
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    encryption: profile.lean
      ? dynamodb.TableEncryptionV2.dynamoOwnedKey()
      : dynamodb.TableEncryptionV2.awsManagedKey(),
    deletionProtection: production,
    removalPolicy: production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    ...overrides,
    // The keys and indexes the code queries come last, so no override can change them.
    partitionKey: attribute(definition.partitionKey),
    ...(definition.sortKey && { sortKey: attribute(definition.sortKey) }),
    ...(definition.ttlAttribute && { timeToLiveAttribute: definition.ttlAttribute }),
    globalSecondaryIndexes: definition.indexes.map((index) => ({
      indexName: index.name,
      partitionKey: attribute(index.partitionKey),
      sortKey: attribute(index.sortKey),
      projectionType:
        index.projection === "ALL" ? dynamodb.ProjectionType.ALL : dynamodb.ProjectionType.KEYS_ONLY,
    })),
  });
}

export interface Cache {
  readonly resource: elasticache.CfnReplicationGroup | elasticache.CfnServerlessCache;
  /** `rediss://[user@]host:port`; the password is read from `authSecret` at run time. */
  readonly url: string;
  readonly cluster: boolean;
  /** The ports the functions connect to. */
  readonly ports: readonly number[];
  readonly securityGroup: ec2.SecurityGroup;
  /** `{ "redisAuthToken": … }`: the replication group's AUTH token, or the serverless user's password. */
  readonly authSecret: secretsmanager.Secret;
}

/** The ElastiCache user the functions connect as on serverless Valkey (RBAC). */
export const CACHE_USER = "hourglass";
/** The user group's own `default` user: disabled, no commands, no keys. */
export const DISABLED_DEFAULT_USER_ACCESS = "off -@all";

/**
 * Valkey with TLS in transit, encryption at rest, authentication, and a security group that admits
 * only the Hourglass functions. The replication group uses an AUTH token and, in production, a
 * Multi-AZ replica and a final snapshot on delete; serverless Valkey uses an ElastiCache user in a
 * user group (RBAC), whose password is the same kind of generated secret.
 *
 * The AUTH secret is destroyed with its cache: a cache built again (even from a snapshot) gets a
 * new token, so a retained secret would only be an orphan.
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
    description:
      mode === "serverless" ? "Hourglass: Valkey user password (RBAC)" : "Hourglass: Valkey AUTH token",
    generateSecretString: {
      secretStringTemplate: "{}",
      generateStringKey: "redisAuthToken",
      excludePunctuation: true,
      passwordLength: 48,
    },
    removalPolicy: RemovalPolicy.DESTROY,
  });
  const subnetIds = vpc.selectSubnets(subnets).subnetIds;
  if (mode === "serverless") {
    const name = `hourglass-${scope.node.addr.slice(0, 12)}`;
    const user = new elasticache.CfnUser(scope, "CacheUser", {
      engine: "valkey",
      userId: `${name}-user`,
      userName: CACHE_USER,
      // Every key and command the Lua scripts and the index need; the only user that is on.
      accessString: "on ~* &* +@all",
      authenticationMode: {
        Type: "password",
        Passwords: [authSecret.secretValueFromJson("redisAuthToken").unsafeUnwrap()],
      },
    });
    // CloudFormation: "A user named default must be included" (AWS::ElastiCache::UserGroup UserIds;
    // CreateUserGroup fails with DefaultUserRequired otherwise), and ElastiCache's own default user
    // may call every command on every key. So the group gets a `default` of its own, switched off:
    // "replace this default user with a new one that isn't enabled" (ElastiCache RBAC guide). An
    // "off" user cannot authenticate with any password; it has one only because a valkey user group
    // admits only users that authenticate with a password or IAM.
    const defaultUser = new elasticache.CfnUser(scope, "CacheDefaultUser", {
      engine: "valkey",
      userId: `${name}-default`,
      userName: "default",
      accessString: DISABLED_DEFAULT_USER_ACCESS,
      authenticationMode: {
        Type: "password",
        Passwords: [authSecret.secretValueFromJson("redisAuthToken").unsafeUnwrap()],
      },
    });
    const userGroup = new elasticache.CfnUserGroup(scope, "CacheUserGroup", {
      engine: "valkey",
      userGroupId: `${name}-users`,
      userIds: [defaultUser.userId, user.userId],
    });
    userGroup.node.addDependency(user, defaultUser);
    const resource = new elasticache.CfnServerlessCache(scope, "Cache", {
      serverlessCacheName: name,
      engine: "valkey",
      majorEngineVersion: "8",
      securityGroupIds: [securityGroup.securityGroupId],
      subnetIds,
      userGroupId: userGroup.userGroupId,
      ...(production && { finalSnapshotName: `${name}-final` }),
    });
    resource.node.addDependency(userGroup);
    return {
      resource,
      url: `rediss://${CACHE_USER}@${resource.attrEndpointAddress}:${resource.attrEndpointPort}`,
      cluster: true,
      // 6379 for the endpoint, 6380 for reads from replicas.
      ports: [6379, 6380],
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
  // Production keeps a final snapshot when the stack (or the cache) is deleted, as docs/deploy.md says.
  resource.applyRemovalPolicy(production ? RemovalPolicy.SNAPSHOT : RemovalPolicy.DESTROY);
  return {
    resource,
    url: `rediss://${resource.attrPrimaryEndPointAddress}:${resource.attrPrimaryEndPointPort}`,
    cluster: false,
    ports: [6380],
    securityGroup,
    authSecret,
  };
}
