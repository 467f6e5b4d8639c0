#undef assert
#ifdef NDEBUG
#define assert(x) ((void)0)
#else
void __sfi_assert_fail(const char *e, const char *f, int l);
#define assert(x) ((x) ? (void)0 : __sfi_assert_fail(#x, __FILE__, __LINE__))
#endif
#ifndef static_assert
#define static_assert _Static_assert
#endif
