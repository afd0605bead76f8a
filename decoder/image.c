/* Images: code bytes per address space, raw files, memory, reads. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Owned storage: file mappings (munmap) or heap copies (free). */
struct blob {
	void *ptr;
	size_t len;
	bool mmapped;
	uint64_t dev, ino; /* the file mapped */
};

/* Symbol names live in a bump arena so that freeing is one pass. */
struct name_chunk {
	struct name_chunk *next;
	size_t used, cap;
	char text[];
};

struct pts_image {
	struct pts_space *spaces;
	size_t nspaces, capspaces;
	struct blob *blobs;
	size_t nblobs, capblobs;
	struct name_chunk *names;
	uint64_t generation;
};

/* Grows *@arr (elements of @elem bytes) to hold @need; doubling. */
static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap * 2 : 8;
	while (ncap < need)
		ncap *= 2;
	void *p = realloc(*arr, ncap * elem);
	if (!p)
		return -PTS_ERR_NOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

struct pts_image *pts_image_new(void)
{
	return calloc(1, sizeof(struct pts_image));
}

void pts_image_free(struct pts_image *img)
{
	if (!img)
		return;
	for (size_t i = 0; i < img->nspaces; i++) {
		free(img->spaces[i].maps);
		free(img->spaces[i].syms);
		free(img->spaces[i].fns);
	}
	free(img->spaces);
	for (size_t i = 0; i < img->nblobs; i++) {
		if (img->blobs[i].mmapped)
			munmap(img->blobs[i].ptr, img->blobs[i].len);
		else
			free(img->blobs[i].ptr);
	}
	free(img->blobs);
	while (img->names) {
		struct name_chunk *next = img->names->next;
		free(img->names);
		img->names = next;
	}
	free(img);
}

static int keep_blob(struct pts_image *img, struct blob b)
{
	int err = grow((void **)&img->blobs, &img->capblobs, img->nblobs + 1,
		       sizeof(*img->blobs));
	if (err)
		return err;
	img->blobs[img->nblobs++] = b;
	return 0;
}

int pts_image_keep_mmap(struct pts_image *img, const struct pts_mapped_file *m)
{
	int err = keep_blob(img, (struct blob){m->ptr, m->len, true, m->dev,
					       m->ino});
	if (err)
		munmap(m->ptr, m->len);
	return err;
}

bool pts_image_reads_file(const struct pts_image *img, const char *path)
{
	struct stat st;
	if (!img || !path || stat(path, &st) != 0)
		return false;
	for (size_t i = 0; i < img->nblobs; i++)
		if (img->blobs[i].mmapped && img->blobs[i].dev == st.st_dev &&
		    img->blobs[i].ino == st.st_ino)
			return true;
	return false;
}

const struct pts_space *pts_image_space(const struct pts_image *img,
					uint64_t cr3)
{
	for (size_t i = 0; i < img->nspaces; i++)
		if (img->spaces[i].cr3 == cr3)
			return &img->spaces[i];
	return NULL;
}

static struct pts_space *space_get(struct pts_image *img, uint64_t cr3)
{
	struct pts_space *s = (struct pts_space *)pts_image_space(img, cr3);
	if (s)
		return s;
	if (grow((void **)&img->spaces, &img->capspaces, img->nspaces + 1,
		 sizeof(*img->spaces)))
		return NULL;
	s = &img->spaces[img->nspaces++];
	memset(s, 0, sizeof(*s));
	s->cr3 = cr3;
	return s;
}

const struct pts_mapping *pts_space_lookup(const struct pts_space *space,
					   uint64_t addr)
{
	size_t lo = 0, hi = space->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct pts_mapping *m = &space->maps[mid];
		if (addr < m->begin)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

/* Removes [begin, end) from the mappings of @s: newer code replaces older
 * code, as a later mmap over the same range would. */
static int carve(struct pts_space *s, uint64_t begin, uint64_t end)
{
	for (size_t i = 0; i < s->nmaps; i++) {
		struct pts_mapping *m = &s->maps[i];
		if (m->end <= begin || m->begin >= end)
			continue;
		if (m->begin < begin && m->end > end) {
			/* The new range sits inside: split in two. */
			int err = grow((void **)&s->maps, &s->capmaps,
				       s->nmaps + 1, sizeof(*s->maps));
			if (err)
				return err;
			m = &s->maps[i];
			memmove(m + 1, m, (s->nmaps - i) * sizeof(*m));
			s->nmaps++;
			m[0].end = begin;
			m[1].data += end - m[1].begin;
			m[1].begin = end;
			return 0;
		}
		if (m->begin < begin) {
			m->end = begin;
		} else if (m->end > end) {
			m->data += end - m->begin;
			m->begin = end;
		} else {
			memmove(m, m + 1, (s->nmaps - i - 1) * sizeof(*m));
			s->nmaps--;
			i--;
		}
	}
	return 0;
}

int pts_image_map(struct pts_image *img, uint64_t cr3, const uint8_t *data,
		  uint64_t size, uint64_t addr)
{
	if (!size || addr + size < addr)
		return -PTS_ERR_INVALID;
	struct pts_space *s = space_get(img, cr3);
	if (!s)
		return -PTS_ERR_NOMEM;
	int err = carve(s, addr, addr + size);
	if (!err)
		err = grow((void **)&s->maps, &s->capmaps, s->nmaps + 1,
			   sizeof(*s->maps));
	if (err)
		return err;
	size_t at = 0;
	while (at < s->nmaps && s->maps[at].begin < addr)
		at++;
	memmove(&s->maps[at + 1], &s->maps[at],
		(s->nmaps - at) * sizeof(*s->maps));
	s->maps[at] = (struct pts_mapping){addr, addr + size, data};
	s->nmaps++;
	img->generation++;
	return 0;
}

int pts_file_map(const char *path, struct pts_mapped_file *m)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -PTS_ERR_IO;
	struct stat st;
	int err = 0;
	if (fstat(fd, &st) != 0)
		err = -PTS_ERR_IO;
	else if (!S_ISREG(st.st_mode)) {
		/* errno, for the caller's message */
		errno = S_ISDIR(st.st_mode) ? EISDIR : ENODEV;
		err = -PTS_ERR_IO;
	} else if (st.st_size <= 0)
		err = -PTS_ERR_INVALID;
	if (err) {
		const int saved = errno;
		close(fd);
		errno = saved;
		return err;
	}
	/* Private and writable: libelf may fix up headers in place; our
	 * pages stay copy-on-write and the file is never changed. */
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE, fd, 0);
	int saved = errno;
	close(fd);
	if (p == MAP_FAILED) {
		errno = saved;
		return -PTS_ERR_IO;
	}
	*m = (struct pts_mapped_file){p, (size_t)st.st_size, st.st_dev,
				      st.st_ino};
	return 0;
}

int pts_image_add_raw(struct pts_image *img, uint64_t cr3, const char *path,
		      uint64_t from, uint64_t to, uint64_t addr)
{
	if (!img || !path)
		return -PTS_ERR_INVALID;
	struct pts_mapped_file m;
	int err = pts_file_map(path, &m);
	if (err)
		return err;
	if (!to)
		to = m.len;
	if (from >= to || to > m.len || addr + (to - from) < addr) {
		munmap(m.ptr, m.len);
		return -PTS_ERR_INVALID;
	}
	err = pts_image_keep_mmap(img, &m);
	if (err)
		return err;
	return pts_image_map(img, cr3, (const uint8_t *)m.ptr + from,
			     to - from, addr);
}

int pts_image_add_mem(struct pts_image *img, uint64_t cr3, const void *bytes,
		      size_t size, uint64_t addr)
{
	if (!img || !bytes || !size || addr + size < addr)
		return -PTS_ERR_INVALID;
	void *copy = malloc(size);
	if (!copy)
		return -PTS_ERR_NOMEM;
	memcpy(copy, bytes, size);
	int err = keep_blob(img, (struct blob){copy, size, false, 0, 0});
	if (err) {
		free(copy);
		return err;
	}
	return pts_image_map(img, cr3, copy, size, addr);
}

/* The mapping holding @addr in space @cr3, else in the default space. */
static const struct pts_mapping *lookup(const struct pts_image *img,
					uint64_t cr3, uint64_t addr)
{
	const struct pts_space *s = pts_image_space(img, cr3);
	const struct pts_mapping *m = s ? pts_space_lookup(s, addr) : NULL;
	if (!m && cr3) {
		s = pts_image_space(img, 0);
		m = s ? pts_space_lookup(s, addr) : NULL;
	}
	return m;
}

int pts_image_read(const struct pts_image *img, uint64_t cr3, uint64_t addr,
		   const uint8_t **bytes)
{
	if (!img || !bytes)
		return -PTS_ERR_INVALID;
	const struct pts_mapping *m = lookup(img, cr3, addr);
	if (!m)
		return -PTS_ERR_NOMAP;
	*bytes = m->data + (addr - m->begin);
	uint64_t n = m->end - addr;
	return n > INT32_MAX ? INT32_MAX : (int)n;
}

int pts_image_fetch(const struct pts_image *img, uint64_t cr3, uint64_t addr,
		    uint8_t *buf, size_t cap)
{
	if (!img || !buf)
		return -PTS_ERR_INVALID;
	size_t got = 0;
	while (got < cap) {
		const struct pts_mapping *m = lookup(img, cr3, addr + got);
		if (!m)
			break;
		uint64_t avail = m->end - (addr + got);
		size_t n = avail < cap - got ? (size_t)avail : cap - got;
		memcpy(buf + got, m->data + (addr + got - m->begin), n);
		got += n;
		if (addr + got < addr) /* wrapped at the top of memory */
			break;
	}
	return got ? (int)got : -PTS_ERR_NOMAP;
}

uint64_t pts_image_generation(const struct pts_image *img)
{
	return img ? img->generation : 0;
}

/* ------------------------------------------------------------------------ */
/* Symbols.                                                                  */

static const char *keep_name(struct pts_image *img, const char *name)
{
	size_t n = strlen(name) + 1;
	struct name_chunk *c = img->names;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > 65536 ? n : 65536;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->next = img->names;
		c->used = 0;
		c->cap = cap;
		img->names = c;
	}
	char *dst = c->text + c->used;
	memcpy(dst, name, n);
	c->used += n;
	return dst;
}

int pts_image_add_symbol(struct pts_image *img, uint64_t cr3,
			 const struct pts_symbol *sym, bool function)
{
	struct pts_space *s = space_get(img, cr3);
	if (!s)
		return -PTS_ERR_NOMEM;
	int err = grow((void **)&s->syms, &s->capsyms, s->nsyms + 1,
		       sizeof(*s->syms));
	if (!err && function)
		err = grow((void **)&s->fns, &s->capfns, s->nfns + 1,
			   sizeof(*s->fns));
	if (err)
		return err;
	struct pts_symbol kept = *sym;
	kept.name = keep_name(img, sym->name);
	if (!kept.name)
		return -PTS_ERR_NOMEM;
	s->syms[s->nsyms++] = kept;
	if (function)
		s->fns[s->nfns++] = kept;
	return 0;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct pts_symbol *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* The one that names the address first: the one that knows its size
	 * (an alias may not), then by name. */
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Sorts @n symbols by sym_cmp() and drops repeats: with @aliases, only a
 * symbol met again (the same address and name); without, every one after
 * the first at its address. Returns how many stay. */
static size_t sort_symbols(struct pts_symbol *syms, size_t n, bool aliases)
{
	if (!n)
		return 0;
	qsort(syms, n, sizeof(*syms), sym_cmp);
	size_t out = 1;
	for (size_t i = 1; i < n; i++) {
		const struct pts_symbol *kept = &syms[out - 1];
		if (syms[i].addr != kept->addr ||
		    (aliases && strcmp(syms[i].name, kept->name) != 0))
			syms[out++] = syms[i];
	}
	return out;
}

void pts_image_sort_symbols(struct pts_image *img, uint64_t cr3)
{
	struct pts_space *s = (struct pts_space *)pts_image_space(img, cr3);
	if (!s)
		return;
	s->nsyms = sort_symbols(s->syms, s->nsyms, true);
	s->nfns = sort_symbols(s->fns, s->nfns, false);
}

static const struct pts_symbol *sym_at(const struct pts_space *s,
				       uint64_t addr)
{
	if (!s || !s->nsyms || addr < s->syms[0].addr)
		return NULL;
	size_t lo = 0, hi = s->nsyms; /* last with addr <= @addr */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->syms[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	/* Aliases follow the symbol that names their address. */
	while (lo && s->syms[lo - 1].addr == s->syms[lo].addr)
		lo--;
	const struct pts_symbol *sym = &s->syms[lo];
	if (sym->size && addr - sym->addr >= sym->size)
		return NULL;
	return sym;
}

const struct pts_symbol *pts_image_symbol_at(const struct pts_image *img,
					     uint64_t cr3, uint64_t addr)
{
	if (!img)
		return NULL;
	const struct pts_symbol *sym = sym_at(pts_image_space(img, cr3), addr);
	if (!sym && cr3)
		sym = sym_at(pts_image_space(img, 0), addr);
	return sym;
}

/* The symbol @name: its default version when it has several. */
static const struct pts_symbol *sym_named(const struct pts_space *s,
					  const char *name)
{
	const struct pts_symbol *older = NULL;
	for (size_t i = 0; s && i < s->nsyms; i++) {
		const struct pts_symbol *sym = &s->syms[i];
		if (strcmp(sym->name, name) != 0)
			continue;
		if (!sym->older_version)
			return sym;
		older = older ? older : sym;
	}
	return older;
}

const struct pts_symbol *pts_image_symbol_find(const struct pts_image *img,
					       uint64_t cr3, const char *name)
{
	if (!img || !name)
		return NULL;
	const struct pts_symbol *sym = sym_named(pts_image_space(img, cr3), name);
	if (!sym && cr3)
		sym = sym_named(pts_image_space(img, 0), name);
	return sym;
}

size_t pts_image_functions(const struct pts_image *img, uint64_t cr3,
			   const struct pts_symbol **syms)
{
	const struct pts_space *s = img ? pts_image_space(img, cr3) : NULL;
	if (syms)
		*syms = s ? s->fns : NULL;
	return s ? s->nfns : 0;
}
