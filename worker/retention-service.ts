/**
 * The Retention service (our extension, proto/agentsessions/edge/v1/retention.proto; docs/retention.md):
 * set or read a project's retention policy in the caller's tenant Directory, whose alarm deletes
 * the sessions the policy selects in bounded batches. SetRetention needs the admin role
 * (worker/auth/authorize.ts); GetRetention needs read.
 */
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { Retention } from "../proto/gen/agentsessions/edge/v1/retention_pb.js";
import { decodeBinary } from "../proto/binary-reader.js";
import { SessionSchema } from "../proto/gen/agentsessions/v1/session_pb.js";
import { directoryStub, type Env } from "../objects/index.js";
import { MAX_KEEP_LATEST, MAX_RETENTION_DAYS, type RetentionPolicyRow } from "../objects/directory/retention-store.js";
import { MAX_STATICS_BYTES } from "../objects/session/meta-store.js";
import { callerOf } from "./context.js";

/** Most sessions a dry run lists. */
export const MAX_DRY_RUN_LIST = 1000;

export function createRetentionService(env: Env): ServiceImpl<typeof Retention> {
  return {
    async setRetention(req, ctx) {
      const p = req.policy;
      const project = checkProject(p?.project ?? "");
      const days = p?.days ?? 0;
      const keepLatest = p?.keepLatest ?? 0;
      if (!Number.isInteger(days) || days < 0 || days > MAX_RETENTION_DAYS) {
        throw new ConnectError(`policy.days must be a whole number of days from 1 to ${MAX_RETENTION_DAYS} (0 clears the policy)`, Code.InvalidArgument);
      }
      if (!Number.isInteger(keepLatest) || keepLatest < 0 || keepLatest > MAX_KEEP_LATEST) {
        throw new ConnectError(`policy.keep_latest must be from 0 to ${MAX_KEEP_LATEST} sessions`, Code.InvalidArgument);
      }
      if (days === 0 && keepLatest !== 0) {
        throw new ConnectError("policy.keep_latest needs days: give --days N, or clear the policy with --days 0 alone", Code.InvalidArgument);
      }
      const tenant = callerOf(ctx).tenant;
      const r = await directoryStub(env, tenant).setRetention(tenant, { project, days, keepLatest }, req.dryRun, MAX_DRY_RUN_LIST);
      return {
        policy: r.policy ? policyMessage(r.policy) : { project },
        wouldDelete: r.wouldDelete.map((c) => ({
          uid: c.uid,
          name: decodeBinary(SessionSchema, c.session).metadata?.name ?? "",
          updateTimeMs: BigInt(c.updateMs),
        })),
        truncated: r.truncated,
      };
    },

    async getRetention(req, ctx) {
      const project = checkProject(req.project);
      const r = await directoryStub(env, callerOf(ctx).tenant).getRetention(project);
      return {
        policy: r.policy ? policyMessage(r.policy) : { project },
        deleted: BigInt(r.policy?.deleted ?? 0),
        lastSweepMs: BigInt(r.lastSweepMs),
        sweeps: BigInt(r.sweeps),
      };
    },
  };
}

function checkProject(project: string): string {
  if (project === "")
    throw new ConnectError("a retention policy is per project: give the project (agentctl retention set --project P ...)", Code.InvalidArgument);
  if (new TextEncoder().encode(project).length > MAX_STATICS_BYTES) throw new ConnectError("project is longer than any stored project", Code.InvalidArgument);
  return project;
}

function policyMessage(p: RetentionPolicyRow) {
  return { project: p.project, days: p.days, keepLatest: p.keepLatest, updateTimeMs: BigInt(p.updateMs) };
}
