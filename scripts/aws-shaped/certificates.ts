import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** PEM files of a throwaway CA and of a server certificate it signed, for loopback. */
export interface Certificates {
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
}

/** `openssl` failed while making the certificates; `step` says which command, `output` what it said. */
export class CertificateError extends Error {
  constructor(
    readonly step: string,
    readonly output: string,
  ) {
    super(`openssl ${step} failed: ${output.trim() || "(no output)"}`);
    this.name = "CertificateError";
  }
}

/**
 * Our own configuration files rather than `-addext` on top of the system's `openssl.cnf`: what
 * `req -x509` adds by default (and which `-addext` values it keeps) comes from that file, so what
 * the CA holds would depend on the machine. With these, it depends only on this file.
 */
const CA_CONFIG = `[req]
distinguished_name = dn
prompt = no
x509_extensions = ca
[dn]
CN = Hourglass throwaway CA
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
`;

/**
 * The server certificate is valid for the address clients dial (127.0.0.1: Node checks an IP
 * against the IP SANs, never the CN) and for `localhost`. Redis uses the same certificate as a
 * client on the cluster bus, hence `clientAuth` beside `serverAuth`.
 */
const SERVER_EXTENSIONS = `basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
`;

/** A week: long enough for any run, short enough that a leaked key is worth nothing for long. */
const DAYS = "7";

/** Makes a CA and a server certificate for loopback in `dir` (created if missing). About 50 ms. */
export function createCertificates(dir: string): Certificates {
  mkdirSync(dir, { recursive: true });
  const file = (name: string) => join(dir, name);
  writeFileSync(file("ca.cnf"), CA_CONFIG);
  writeFileSync(file("server.ext"), SERVER_EXTENSIONS);
  // P-256 keys: generated in milliseconds, and every TLS stack here speaks them.
  const newKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  openssl("CA", [
    "req",
    "-x509",
    ...newKey,
    "-config",
    file("ca.cnf"),
    "-keyout",
    file("ca.key"),
    "-out",
    file("ca.crt"),
    "-days",
    DAYS,
  ]);
  openssl("server request", [
    "req",
    "-new",
    ...newKey,
    "-subj",
    "/CN=localhost",
    "-keyout",
    file("server.key"),
    "-out",
    file("server.csr"),
  ]);
  openssl("server signing", [
    "x509",
    "-req",
    "-in",
    file("server.csr"),
    "-CA",
    file("ca.crt"),
    "-CAkey",
    file("ca.key"),
    "-set_serial",
    `0x${Date.now().toString(16)}`,
    "-extfile",
    file("server.ext"),
    "-out",
    file("server.crt"),
    "-days",
    DAYS,
  ]);
  return { caFile: file("ca.crt"), certFile: file("server.crt"), keyFile: file("server.key") };
}

function openssl(step: string, args: string[]): void {
  try {
    execFileSync("openssl", args, { stdio: ["ignore", "pipe", "pipe"] });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? "";
    throw new CertificateError(step, stderr || (error instanceof Error ? error.message : String(error)));
  }
}
