/* perf.data: walking the record stream. Records follow each other in the
 * data section, except inside COMPRESSED records (`perf record -z`): their
 * payloads, inflated at open into one stream (perfdata_zstd.c), hold
 * records of their own, and a record may be cut between two COMPRESSED
 * records. As perf does (session.c keeps the unread rest of one record's
 * output for the next), the walk reads inside a COMPRESSED record only the
 * records that end within what the COMPRESSED records read so far
 * inflated to; the rest comes with the next one. */
#include "perfdata_internal.h"

static int is_compressed(uint32_t type)
{
	return type == PTS_PERF_RECORD_COMPRESSED ||
	       type == PTS_PERF_RECORD_COMPRESSED2;
}

/* The next record inside the decompressed stream, if it ends before
 * cur->zend. Returns 1 (found), 0 (none now), or a framing error. */
static int step_inside(const struct pts_perf *perf, struct pts_perf_cursor *cur,
		       uint64_t *pos, uint64_t *len, struct pts_perf_error *err)
{
	uint64_t zlimit = perf->size + perf->zsize;
	if (cur->zpos >= cur->zend)
		return 0;
	uint64_t l;
	int rc = pts_perf_frame_in(perf, cur->zpos, zlimit, &l, err);
	if (rc < 0) {
		*pos = cur->zpos;
		pts_perf_zfix_error(perf, cur->zpos, err);
		return rc;
	}
	if (l > cur->zend - cur->zpos)
		return 0; /* continues in the next COMPRESSED record */
	*pos = cur->zpos;
	*len = l;
	cur->zpos += l;
	return 1;
}

int pts_perf_step(const struct pts_perf *perf, struct pts_perf_cursor *cur,
		  uint64_t *pos, uint64_t *len, struct pts_perf_error *err)
{
	uint64_t end = perf->sum.data_end;
	for (;;) {
		if (cur->zend) {
			int rc = step_inside(perf, cur, pos, len, err);
			if (rc != 0) {
				if (rc < 0) {
					/* A broken frame hides the rest, in
					 * the stream and in the file; the
					 * cursor still moves past it. */
					cur->zpos = cur->zend;
					cur->zend = 0;
					cur->pos = end;
				}
				return rc;
			}
			cur->zend = 0;
		}
		if (cur->pos >= end)
			return 0;
		uint64_t l;
		int rc = pts_perf_frame(perf, cur->pos, &l, err);
		if (rc < 0) {
			*pos = cur->pos;
			cur->pos = end; /* a broken frame hides the next */
			return rc;
		}
		uint64_t at = cur->pos;
		cur->pos += l;
		if (is_compressed(pts_rd32(perf->data + at))) {
			/* Absent when inflating stopped before it (damage). */
			const struct pts_perf_zrec *z = pts_perf_zrec_at(perf, at);
			if (z)
				cur->zend = z->zend;
			continue;
		}
		*pos = at;
		*len = l;
		return 1;
	}
}

void pts_perf_cursor_init(const struct pts_perf *perf,
			  struct pts_perf_cursor *cur)
{
	memset(cur, 0, sizeof(*cur));
	cur->pos = perf->sum.data_offset;
	cur->zpos = perf->size; /* the decompressed stream's start */
}

int pts_perf_next_record(const struct pts_perf *perf,
			 struct pts_perf_cursor *cur,
			 struct pts_perf_record *rec,
			 struct pts_perf_error *err)
{
	uint64_t pos, len;
	int rc = pts_perf_step(perf, cur, &pos, &len, err);
	if (rc <= 0) {
		memset(rec, 0, sizeof(*rec));
		rec->offset = rc < 0 ? pos : cur->pos;
		rec->attr = -1;
		return rc;
	}
	cur->index++;
	rc = pts_perf_decode(perf, pos, rec, err);
	if (rc < 0 && pos >= perf->size)
		pts_perf_zfix_error(perf, pos, err);
	return rc;
}
