import type { Queryable } from "../../db/queryable.ts";
import { ConflictError, NotFoundError, ValidationError } from "../../errors.ts";
import { newId } from "../../ids.ts";

export interface User {
  id: string;
  email: string;
  name: string | null;
}

/** Emails are compared case-insensitively; stored lower-cased. */
export function normalizeEmail(raw: string): string {
  const email = raw.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw new ValidationError(`"${raw}" is not an email address`);
  return email;
}

export async function createUser(db: Queryable, input: { email: string; name?: string }): Promise<User> {
  const email = normalizeEmail(input.email);
  const { rows } = await db.query<User>(
    `INSERT INTO users (id, email, name) VALUES ($1, $2, $3) ON CONFLICT (email) DO NOTHING RETURNING id, email, name`,
    [newId.user(), email, input.name ?? null],
  );
  if (!rows[0]) throw new ConflictError(`A user with email ${email} already exists`);
  return rows[0];
}

export async function findUserByEmail(db: Queryable, email: string): Promise<User | null> {
  const { rows } = await db.query<User>(`SELECT id, email, name FROM users WHERE email = $1`, [normalizeEmail(email)]);
  return rows[0] ?? null;
}

export async function getUserByEmail(db: Queryable, email: string): Promise<User> {
  const user = await findUserByEmail(db, email);
  if (!user) throw new NotFoundError(`No user with email ${normalizeEmail(email)}`);
  return user;
}
