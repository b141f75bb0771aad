/* embed.c: the smallest useful mgc program.  Young blocks move at every
 * collection, so a value held across an allocation or a collection must sit
 * in a registered root (MGC_PARAM/MGC_LOCAL, or a global root) and be read
 * back from it afterwards.  Exits 0 when the data survived intact.
 */
#include <mgc.h>
#include <stdio.h>

static mgc_value table = MGC_UNIT; /* a global root: [list, name] */

int main(void) {
  if (mgc_init(NULL) != MGC_OK)
    return 1;
  mgc_register_global_root(&table);
  table = mgc_alloc(2, 0); /* young; its fields start as MGC_UNIT */
  mgc_minor_collection();  /* promotes it: table is now an old block */
  MGC_PARAM0;              /* opens a frame of local roots */
  MGC_LOCAL2(list, name);  /* rooted variables, set to MGC_UNIT */
  for (long i = 100; i >= 1; i--) {
    mgc_value c = mgc_alloc_small(2, 0); /* fields unset: plain stores */
    MGC_FIELD(c, 0) = MGC_VAL_INT(i);    /* now, before any other */
    MGC_FIELD(c, 1) = list;              /* allocation */
    list = c;
  }
  name = mgc_copy_string("1..100");       /* may collect: list is rooted */
  mgc_modify(&MGC_FIELD(table, 0), list); /* old block, young values: */
  mgc_modify(&MGC_FIELD(table, 1), name); /* the write barrier remembers */
  MGC_DROP;         /* from here on only the global root keeps them alive */
  mgc_full_major(); /* empties the minor heap first, then marks and sweeps */
  long sum = 0;
  for (mgc_value l = MGC_FIELD(table, 0); l != MGC_UNIT; l = MGC_FIELD(l, 1))
    sum += MGC_INT_VAL(MGC_FIELD(l, 0));
  int ok = sum == 5050 && mgc_string_length(MGC_FIELD(table, 1)) == 6;
  printf("sum of %s = %ld\n", MGC_STRING_VAL(MGC_FIELD(table, 1)), sum);
  mgc_shutdown(); /* frees everything, global roots included */
  return ok ? 0 : 1;
}
