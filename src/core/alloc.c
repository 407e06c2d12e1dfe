/* Large-array allocation with transparent huge pages (see include/shiftsim/alloc.h). */
#include <shiftsim/alloc.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#define HUGE_PAGE ((gsize)2 << 20)
#define LARGE     ((gsize)2 << 20)

void ssim_mem_advise(gpointer p, gsize bytes)
{
#ifdef MADV_HUGEPAGE
    if (p == NULL || bytes < LARGE)
        return;
    uintptr_t a = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
    uintptr_t b = ((uintptr_t)p + bytes) & ~(uintptr_t)(HUGE_PAGE - 1);
    if (b > a)
        (void)madvise((void *)a, b - a, MADV_HUGEPAGE); /* a hint: failure changes nothing */
#else
    (void)p;
    (void)bytes;
#endif
}

void ssim_alloc_keep_freed_memory(void)
{
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
    (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
    (void)mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

gpointer ssim_alloc_large(gsize n, gsize size, gboolean zero)
{
    if (n > 0 && size > G_MAXSIZE / n)
        g_error("ssim_alloc_large: %" G_GSIZE_FORMAT " x %" G_GSIZE_FORMAT " bytes overflows", n,
                size);
    gsize bytes = n * size;
    /* Advise before the first touch: zeroing after the advice faults in huge pages. */
    gpointer p = g_malloc(bytes);
    ssim_mem_advise(p, bytes);
    if (zero && p != NULL)
        memset(p, 0, bytes);
    return p;
}

gpointer ssim_memdup_large(gconstpointer src, gsize bytes)
{
    gpointer p = ssim_alloc_large(bytes, 1, FALSE);
    if (bytes > 0)
        memcpy(p, src, bytes);
    return p;
}

GArray *ssim_array_new_large(guint elt, gsize reserve)
{
    g_return_val_if_fail(reserve <= G_MAXUINT, NULL);
    GArray *a = g_array_sized_new(FALSE, FALSE, elt, (guint)reserve);
    ssim_mem_advise(a->data, (gsize)elt * reserve);
    return a;
}

void ssim_array_make_room(GArray *a, gsize *cap, guint n)
{
    guint len = a->len;
    gsize want = MAX(2 * ((gsize)len + n), (gsize)16);
    g_return_if_fail(want <= G_MAXUINT);
    g_array_set_size(a, (guint)want); /* the room exists once the elements do */
    g_array_set_size(a, len);         /* GLib never shrinks the storage */
    *cap = want;
}

#if defined(__SANITIZE_ADDRESS__)
#define SSIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SSIM_ASAN 1
#endif
#endif

#ifdef SSIM_ASAN
/* AddressSanitizer's runtime (sanitizer/allocator_interface.h, which GCC does not install). */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

guint64 ssim_alloc_resident_bytes(void)
{
#ifdef SSIM_ASAN
    /* Under AddressSanitizer the resident set is mostly the sanitizer's: shadow memory, redzones
     * and a quarantine of up to 256 MB of freed blocks.  What the program itself holds is the
     * allocator's live bytes, which is what --max-memory bounds in an uninstrumented build. */
    return (guint64)__sanitizer_get_current_allocated_bytes();
#else
    unsigned long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f != NULL) {
        if (fscanf(f, "%lu %lu", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    if (resident > 0)
        return (guint64)resident * (guint64)sysconf(_SC_PAGESIZE);
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (guint64)ru.ru_maxrss * 1024 : 0;
#endif
}

/* A cgroup limit file's value ("max" or unreadable: 0). */
static guint64 cgroup_limit(const char *path)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return 0;
    guint64 v = 0;
    if (!g_ascii_string_to_unsigned(g_strstrip(text), 10, 1, G_MAXUINT64, &v, NULL))
        return 0;
    return v;
}

guint64 ssim_alloc_available_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    guint64 phys = pages > 0 && page > 0 ? (guint64)pages * (guint64)page : 0;
    const char *files[] = {"/sys/fs/cgroup/memory.max",
                           "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
    for (gsize i = 0; i < G_N_ELEMENTS(files); i++) {
        guint64 lim = cgroup_limit(files[i]);
        if (lim > 0 && (phys == 0 || lim < phys))
            phys = lim;
    }
    return phys;
}
