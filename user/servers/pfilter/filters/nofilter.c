/* A valid module without a `filter` entry: the server refuses it. */
typedef unsigned long u64;

u64 not_a_filter(u64 x)
{
    return x + 1;
}
