/* Fuzz target for the perf.data reader: the input is a perf.data file (file
 * or pipe mode). It is opened from memory, every record is decoded, every
 * lookup is asked, and each queue's PT bytes go through the packet decoder
 * the way `ptscope perf dump` feeds them.
 *
 * Invariants (abort on violation):
 * - open fails with a message and no handle, or gives a handle (damaged:
 *   with a message);
 * - record iteration moves forward and ends, and errors come with a
 *   message naming an offset inside the file;
 * - every buffer slice lies inside the input (or, for AUXTRACE records
 *   inside COMPRESSED records, inside the decompressed stream); a queue's
 *   bytes are the sum of its slices.
 * zstd-compressed inputs (seeds zstd-*.data) reach the inflate path and the
 * walk into COMPRESSED records. Each queue's packets also go through perf's
 * clock (pts_perf_clock), its CYC measurement fed the packets after each
 * MTC that asks for one, as `perf flow` feeds them: no CYC or MTC takes
 * the time back.
 */
#include "fuzz_target.h"

#include <ptscope/perfdata.h>

#include <string.h>

static void check_records(const struct pts_perf *perf, size_t size)
{
	const struct pts_perf_summary *s = pts_perf_summary(perf);
	struct pts_perf_cursor cur;
	struct pts_perf_record rec;
	struct pts_perf_error err;
	uint64_t n = 0, last = 0;
	int rc;
	pts_perf_cursor_init(perf, &cur);
	while ((rc = pts_perf_next_record(perf, &cur, &rec, &err)) != 0) {
		/* In the file or in the decompressed stream: one moves. */
		REQUIRE(n == 0 || cur.pos + cur.zpos > last);
		last = cur.pos + cur.zpos;
		REQUIRE(++n <= s->nr_records + 1);
		if (rc < 0) {
			REQUIRE(err.msg[0] != 0 && err.offset < size);
			continue;
		}
		if (rec.compressed)
			REQUIRE(rec.zoffset + rec.size <= s->decompressed_bytes &&
				rec.file_offset < size);
		else
			REQUIRE(rec.offset + rec.size <= size);
		if (rec.type == PTS_PERF_RECORD_MMAP ||
		    rec.type == PTS_PERF_RECORD_MMAP2) {
			const struct pts_perf_mmap *m = &rec.u.mmap;
			volatile char sink = m->filename.len ? m->filename.ptr[
						m->filename.len - 1] : 0;
			(void)sink;
		}
	}
}

static void decode_queue(const struct pts_perf *perf, uint32_t qi,
			 const uint8_t *data, size_t size)
{
	const struct pts_perf_queue *q = pts_perf_queue_get(perf, qi);
	REQUIRE(q != NULL);
	struct pts_pkt_decoder *dec = pts_pkt_decoder_new(NULL);
	if (!dec)
		return;
	uint64_t bytes = 0;
	struct pts_perf_clock clock;
	struct pts_perf_cyc_cal cal;
	int measuring = 0;
	pts_perf_clock_init(&clock, perf);
	for (uint32_t j = 0; j < q->nr_buffers; j++) {
		const struct pts_perf_buffer *b = pts_perf_queue_buffer(perf, qi, j);
		REQUIRE(b != NULL);
		const struct pts_perf_summary *s = pts_perf_summary(perf);
		if (b->record_offset >= size)
			REQUIRE(b->data_offset - size + b->use_size + b->skip <=
				s->decompressed_bytes);
		else
			REQUIRE(b->data >= data && b->use_size <= size &&
				b->data + b->use_size <= data + size);
		REQUIRE(b->use_size + b->skip <= b->size);
		bytes += b->use_size;
		if (j > 0 && !b->consecutive)
			pts_pkt_reset(dec, bytes - b->use_size, 0);
		pts_perf_clock_buffer(&clock, b->reference,
				      j > 0 && b->consecutive);
		struct pts_input in = {b->data, (size_t)b->use_size, 0};
		struct pts_packet pkt;
		int stuck = 0;
		for (;;) {
			int rc = pts_pkt_next(dec, &in, &pkt);
			if (rc == -PTS_ERR_AGAIN || rc == -PTS_ERR_EOS)
				break;
			if (rc > 0) {
				stuck = 0;
				measuring = measuring &&
					    !pts_perf_cyc_cal_step(&clock, &cal,
								   &pkt);
				uint64_t before = clock.timestamp;
				pts_perf_clock_fetched(&clock, pkt.kind);
				pts_perf_clock_packet(&clock, &pkt);
				if (pkt.kind == PTS_PKT_CYC ||
				    pkt.kind == PTS_PKT_MTC)
					REQUIRE(clock.timestamp >= before);
				if (clock.cal_due) {
					pts_perf_cyc_cal_start(&clock, &cal);
					measuring = 1;
				}
			} else {
				REQUIRE(++stuck < 64);
			}
		}
	}
	REQUIRE(bytes == q->bytes);
	pts_pkt_decoder_free(dec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pts_perf *perf;
	struct pts_perf_error err;
	int rc = pts_perf_open_mem(data, size, &perf, &err);
	if (rc < 0) {
		REQUIRE(perf == NULL && err.msg[0] != 0 && err.code == rc);
		return 0;
	}
	REQUIRE(perf != NULL && (rc == 0 || rc == 1));
	REQUIRE(rc == 0 || err.msg[0] != 0);
	const struct pts_perf_summary *s = pts_perf_summary(perf);
	REQUIRE(s->data_end <= size && s->damaged == (rc == 1));

	check_records(perf, size);
	for (uint32_t i = 0; i < pts_perf_attr_count(perf); i++) {
		const struct pts_perf_attr *a = pts_perf_attr_get(perf, i);
		REQUIRE(a != NULL);
		if (a->nr_ids)
			REQUIRE(pts_perf_attr_by_id(perf, a->ids[0]) != NULL);
	}
	struct pts_perf_pt_info pt;
	struct pts_perf_pt_config cfg;
	struct pts_perf_time_conv tc;
	if (pts_perf_pt_info(perf, &pt) == 0 && pt.filter.len)
		REQUIRE(memchr(pt.filter.ptr, 0, pt.filter.len) == NULL);
	pts_perf_pt_config(perf, &cfg);
	pts_perf_time_conv(perf, &tc);
	pts_perf_tsc_to_time(&tc, UINT64_MAX);
	for (uint32_t i = 0; i < pts_perf_queue_count(perf); i++) {
		const struct pts_perf_queue *q = pts_perf_queue_get(perf, i);
		int32_t pid, tid;
		if (pts_perf_thread_at(perf, q->cpu, q->first_reference, &pid,
				       &tid))
			REQUIRE(pts_perf_thread_ran(perf, q->cpu, tid) == 1);
		pts_perf_comm_of(perf, q->tid);
		decode_queue(perf, i, data, size);
	}
	pts_perf_close(perf);
	return 0;
}
