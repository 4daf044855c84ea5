/* noether/export.h — symbol visibility. The libraries are built with hidden visibility; what
 * their public headers declare with NOETHER_API is exported (C and C++). */
#ifndef NOETHER_EXPORT_H
#define NOETHER_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define NOETHER_API __attribute__((visibility("default")))
#else
#define NOETHER_API
#endif

#endif /* NOETHER_EXPORT_H */
