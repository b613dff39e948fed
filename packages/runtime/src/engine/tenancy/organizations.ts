import type { Queryable } from "../../db/queryable.ts";
import { ConflictError, NotFoundError, ValidationError } from "../../errors.ts";
import { newId } from "../../ids.ts";

export interface Organization {
  id: string;
  slug: string;
  name: string;
}

/** Slugs are lower-case letters, digits and dashes: `acme`, `acme-eu`. */
export function validateSlug(raw: string, what: string): string {
  const slug = raw.trim();
  if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(slug)) {
    throw new ValidationError(`${what} slug "${raw}" must be 1-63 lower-case letters, digits or dashes, starting with a letter or digit`);
  }
  return slug;
}

/** A slug derived from a display name: "My Project!" → "my-project". */
export function slugify(name: string): string {
  const slug = name.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 63);
  return slug || "project";
}

export async function createOrganization(db: Queryable, input: { slug: string; name?: string }): Promise<Organization> {
  const slug = validateSlug(input.slug, "Organisation");
  const { rows } = await db.query<Organization>(
    `INSERT INTO organizations (id, slug, name) VALUES ($1, $2, $3) ON CONFLICT (slug) DO NOTHING RETURNING id, slug, name`,
    [newId.organization(), slug, input.name ?? slug],
  );
  if (!rows[0]) throw new ConflictError(`An organisation with slug ${slug} already exists`);
  return rows[0];
}

export async function getOrganizationBySlug(db: Queryable, slug: string): Promise<Organization> {
  const { rows } = await db.query<Organization>(`SELECT id, slug, name FROM organizations WHERE slug = $1`, [slug]);
  if (!rows[0]) throw new NotFoundError(`No organisation with slug ${slug}`);
  return rows[0];
}
