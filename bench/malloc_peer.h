/* malloc_peer.h: the allocator of the NAME-malloc peers.  The same source
 * built with -DUSE_MIMALLOC is the NAME-mimalloc peer.
 */
#ifndef MALLOC_PEER_H
#define MALLOC_PEER_H

#ifdef USE_MIMALLOC
#include <mimalloc.h>
#define peer_malloc(n) mi_malloc(n)
#define peer_free(p) mi_free(p)
#else
#include <stdlib.h>
#define peer_malloc(n) malloc(n)
#define peer_free(p) free(p)
#endif

#endif /* MALLOC_PEER_H */
