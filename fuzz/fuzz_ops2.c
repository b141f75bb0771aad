/* fuzz_ops2.c: fuzz_ops.c on two domains (see FUZZ_DOMAINS there): each
 * input spawns a second domain that runs the second half of the input on
 * its own model while the first domain runs the first half; they exchange
 * immutable messages through a shared block, and the first domain joins
 * the second before the input ends.
 */
#define FUZZ_DOMAINS 2
#include "fuzz_ops.c"
