import { streamIds, type CategoryCreated } from '@docshare/contracts';
import type { ClaimStore } from '@docshare/claim-store';
import type { CommandMeta, Handled } from './command-handler.ts';
import { categoryDecider, type CommandContext } from './context.ts';

/** A category name's claim (first claim wins, for good): the category it names. */
interface CategoryClaim { categoryId: number; name: string; description: string; tags: string[]; createdBy: number }

/** How many category-name claims a process remembers (oldest out). */
const REMEMBERED_CLAIMS = 10_000;

export interface CategoriesDeps {
  ctx: CommandContext;
  claims: ClaimStore;
}

/** Categories: found by id, or by name and created on first use (an upload names one). */
export const makeCategories = ({ ctx, claims }: CategoriesDeps) => {
  const { events, handler } = ctx;

  const categoryById = async (categoryId: number): Promise<CategoryCreated | null> => {
    const { state } = await handler.load(categoryDecider, streamIds.category(categoryId), (s) => s.status === 'created');
    return state.status === 'created' ? state.category : null;
  };

  /**
   * Category-name claims seen by this process: a claim is never changed or removed (first claim
   * wins, for good), so an upload naming a known category needs no lookup. Bounded, oldest out.
   */
  const categoryClaims = new Map<string, CategoryClaim>();
  const rememberCategoryClaim = (key: string, claim: CategoryClaim): void => {
    categoryClaims.delete(key);
    categoryClaims.set(key, claim);
    if (categoryClaims.size > REMEMBERED_CLAIMS) categoryClaims.delete(categoryClaims.keys().next().value!);
  };

  /**
   * The category named (ignoring case), created on first use (`created`: what that recorded); the
   * name claim makes creation race-free.
   */
  const categoryNamed = async (
    choice: { name: string; description: string; tags: string[] }, actorId: number, meta: CommandMeta,
  ): Promise<{ category: CategoryCreated; created?: Handled<unknown> }> => {
    const key = choice.name.toLowerCase();
    let claim = categoryClaims.get(key) ?? await claims.get<CategoryClaim>('category-name', key);
    if (!claim) {
      const categoryId = await events.nextId('category');
      claim = (await claims.claim<CategoryClaim>('category-name', key, {
        categoryId, name: choice.name, description: choice.description, tags: choice.tags, createdBy: actorId,
      })).value;
    }
    rememberCategoryClaim(key, claim);
    const existing = await categoryById(claim.categoryId);
    if (existing) return { category: existing };
    const now = ctx.clock().toISOString();
    const category: CategoryCreated = { ...claim, createdAt: now };
    try {
      return { category, created: ctx.committed(await handler.handle(categoryDecider, streamIds.category(claim.categoryId), { type: 'CreateCategory', category }, now, meta)) };
    } catch (error) {
      const raced = await categoryById(claim.categoryId);
      if (raced) return { category: raced };
      throw error;
    }
  };

  return { categoryById, categoryNamed };
};

export type Categories = ReturnType<typeof makeCategories>;
