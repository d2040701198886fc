/**
 * The ateapi requests the bridge sends, built with only the fields each call honours on the pinned
 * G3 server (proto/ateapi/control.proto): a G3 server refuses any field it has no descriptor for,
 * and one we set but it ignores would still be a field a later generation could renumber.
 * test/node/substrate/ateapi-golden.test.ts pins their bytes.
 * @internal Used by ateapi-client.ts.
 */
import { create } from "@bufbuild/protobuf";
import {
  CreateActorRequestSchema,
  CreateTagRequestSchema,
  DeleteActorRequestSchema,
  DeleteTagRequestSchema,
  GetActorRequestSchema,
  GetTagRequestSchema,
  ResumeActorRequestSchema,
  SuspendActorRequestSchema,
  TagScope,
  type CreateActorRequest,
  type CreateTagRequest,
  type DeleteActorRequest,
  type DeleteTagRequest,
  type GetActorRequest,
  type GetTagRequest,
  type ResumeActorRequest,
  type SuspendActorRequest,
} from "../../proto/gen/ateapi/control_pb.js";

export interface Ref {
  atespace: string;
  name: string;
}

export function getActorRequest(actor: Ref): GetActorRequest {
  return create(GetActorRequestSchema, { actor: ref(actor) });
}

/** A SUSPENDED actor of `template`, borrowing the template's golden snapshot, or `sourceTag`'s copy. */
export function createActorRequest(actor: Ref, template: Ref, sourceTag?: Ref): CreateActorRequest {
  return create(CreateActorRequestSchema, {
    actor: {
      metadata: { atespace: actor.atespace, name: actor.name },
      actorTemplate: ref(template),
      sourceTag: sourceTag && ref(sourceTag),
    },
  });
}

export function resumeActorRequest(actor: Ref): ResumeActorRequest {
  return create(ResumeActorRequestSchema, { actor: ref(actor) });
}

export function suspendActorRequest(actor: Ref): SuspendActorRequest {
  return create(SuspendActorRequestSchema, { actor: ref(actor) });
}

/** `anyState` deletes a RUNNING actor too (a fan-out's teardown of a clone it just resumed). */
export function deleteActorRequest(actor: Ref, anyState: boolean): DeleteActorRequest {
  return create(DeleteActorRequestSchema, { actor: ref(actor), anyState });
}

/** A tag in the actor's own atespace (scope ATESPACE: it may seed actors only there). */
export function createTagRequest(tag: Ref, sourceActor: Ref): CreateTagRequest {
  return create(CreateTagRequestSchema, {
    tag: { metadata: { atespace: tag.atespace, name: tag.name }, scope: TagScope.ATESPACE, sourceActor: ref(sourceActor) },
  });
}

export function getTagRequest(tag: Ref): GetTagRequest {
  return create(GetTagRequestSchema, { tag: ref(tag) });
}

export function deleteTagRequest(tag: Ref): DeleteTagRequest {
  return create(DeleteTagRequestSchema, { tag: ref(tag) });
}

function ref(r: Ref) {
  return { atespace: r.atespace, name: r.name };
}
