/* Unit tests: pts_flow_disasm() keeps the texts it made (text_cache.c).
 * Every text must be the one pts_insn_disasm() gives for the bytes the
 * image holds at that moment: per address space, per mode, after the
 * image changed, for texts too long to keep, and across evictions. */
#include <ptscope/decoder.h>

#include "check.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A one-instruction record, as pts_flow_next() hands them out. */
static struct pts_flow_rec insn_rec(const uint64_t *ip, const uint8_t *size,
				    uint64_t cr3, int mode)
{
	struct pts_flow_rec r = {.kind = PTS_FLOW_INSNS,
				 .ips = ip,
				 .sizes = size,
				 .n = 1,
				 .cr3 = cr3,
				 .mode = (uint8_t)mode};
	r.ip = *ip;
	return r;
}

/* The text pts_flow_disasm() gives, twice (the second from the cache). */
static void check_text(struct pts_flow *flow, uint64_t ip, uint8_t size,
		       uint64_t cr3, int mode, const char *want)
{
	struct pts_flow_rec r = insn_rec(&ip, &size, cr3, mode);
	char text[160];
	for (int round = 0; round < 2; round++) {
		int n = pts_flow_disasm(flow, &r, 0, text, sizeof(text));
		CHECK(n == (int)strlen(want));
		CHECK(n >= 0 && strcmp(text, want) == 0);
	}
}

/* Whether pts_flow_disasm() gives "mov eax, IMM" for the 5 bytes at @ip
 * in space @cr3 (capstone writes immediates up to 9 in decimal). */
static bool is_mov_eax(struct pts_flow *flow, uint64_t ip, uint64_t cr3,
		       uint32_t imm)
{
	uint8_t size = 5;
	struct pts_flow_rec r = insn_rec(&ip, &size, cr3, PTS_EXEC_64);
	char text[160], want[32];
	snprintf(want, sizeof(want), "mov eax, %s%" PRIx32,
		 imm > 9 ? "0x" : "", imm);
	return pts_flow_disasm(flow, &r, 0, text, sizeof(text)) >= 0 &&
	       strcmp(text, want) == 0;
}

static void test_spaces_modes_changes(void)
{
	struct pts_image *img = pts_image_new();
	const uint8_t push[1] = {0x50}, nop[1] = {0x90}, ret[1] = {0xc3};
	CHECK(pts_image_add_mem(img, 0, push, 1, 0x1000) == 0);
	CHECK(pts_image_add_mem(img, 0x5000, nop, 1, 0x1000) == 0);
	struct pts_flow *flow = pts_flow_new(NULL, img);
	CHECK(flow != NULL);

	/* One address, two spaces, two modes: four keys. */
	check_text(flow, 0x1000, 1, 0, PTS_EXEC_64, "push rax");
	check_text(flow, 0x1000, 1, 0x5000, PTS_EXEC_64, "nop");
	check_text(flow, 0x1000, 1, 0, PTS_EXEC_32, "push eax");
	check_text(flow, 0x1000, 1, 0, PTS_EXEC_64, "push rax");

	/* Newer code over the old: the text kept before is stale. */
	CHECK(pts_image_add_mem(img, 0, ret, 1, 0x1000) == 0);
	check_text(flow, 0x1000, 1, 0, PTS_EXEC_64, "ret");
	check_text(flow, 0x1000, 1, 0x5000, PTS_EXEC_64, "nop");

	/* A text longer than an entry holds is made each time. */
	const uint8_t vex[] = {0xc5, 0xfd, 0x74, 0x8f, 0x20, 0x00,
			       0x01, 0x00}; /* vpcmpeqb with a disp32 */
	CHECK(pts_image_add_mem(img, 0, vex, sizeof(vex), 0x2000) == 0);
	uint64_t ip = 0x2000;
	uint8_t size = 8;
	struct pts_flow_rec r = insn_rec(&ip, &size, 0, PTS_EXEC_64);
	char want[160], text[160];
	int n = pts_flow_disasm(flow, &r, 0, want, sizeof(want));
	CHECK(n > 41 && strncmp(want, "vpcmpeqb ymm1, ymm0, ymmword ptr", 32) == 0);
	CHECK(pts_flow_disasm(flow, &r, 0, text, sizeof(text)) == n);
	CHECK(strcmp(text, want) == 0);

	/* Too small a buffer: the same answer from the cache as without. */
	ip = 0x1000;
	size = 1;
	r = insn_rec(&ip, &size, 0, PTS_EXEC_64);
	CHECK(pts_flow_disasm(flow, &r, 0, text, sizeof(text)) == 3);
	CHECK(pts_flow_disasm(flow, &r, 0, text, 3) == -PTS_ERR_AGAIN);
	CHECK(pts_flow_disasm(flow, &r, 0, text, 4) == 3);

	/* No code there: an error, never a text. */
	ip = 0x9000;
	r = insn_rec(&ip, &size, 0, PTS_EXEC_64);
	CHECK(pts_flow_disasm(flow, &r, 0, text, sizeof(text)) ==
	      -PTS_ERR_NOMAP);
	pts_flow_free(flow);
	pts_image_free(img);
}

/* More distinct instructions than the cache holds (2^16), each asked for
 * in a scrambled order, twice: evicted texts are made again, kept ones
 * are the right ones. "mov eax, imm32" with the address as immediate. */
static void test_evictions(void)
{
	enum { COUNT = 150000, SIZE = 5 };
	uint8_t *code = malloc((size_t)COUNT * SIZE);
	CHECK(code != NULL);
	if (!code)
		return;
	const uint64_t base = 0x400000;
	for (uint32_t i = 0; i < COUNT; i++) {
		uint32_t imm = (uint32_t)(base + (uint64_t)i * SIZE);
		code[i * SIZE] = 0xb8;
		memcpy(&code[i * SIZE + 1], &imm, 4);
	}
	struct pts_image *img = pts_image_new();
	CHECK(pts_image_add_mem(img, 0, code, (size_t)COUNT * SIZE, base) == 0);
	free(code);
	struct pts_flow *flow = pts_flow_new(NULL, img);
	int wrong = 0;
	uint32_t k = 1;
	for (int pass = 0; pass < 2 * COUNT; pass++) {
		k = k * 1103515245u + 12345u;
		uint64_t ip = base + (uint64_t)((k >> 8) % COUNT) * SIZE;
		wrong += !is_mov_eax(flow, ip, 0, (uint32_t)ip);
	}
	CHECK(wrong == 0);
	pts_flow_free(flow);
	pts_image_free(img);
}

/* One address in many spaces, each with its own code: keys that differ
 * only in the space share sets of the cache now and then. */
static void test_many_spaces(void)
{
	enum { SPACES = 2000 };
	static uint64_t cr3[SPACES];
	struct pts_image *img = pts_image_new();
	uint64_t x = 88172645463325252ull;
	for (uint32_t i = 0; i < SPACES; i++) {
		/* scattered, as real page tables are (a regular series
		 * would spread over the sets too evenly to share any) */
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		cr3[i] = (x & 0xffffffffffull) << 12 | (uint64_t)(i + 1) << 12;
		uint8_t mov[5] = {0xb8};
		memcpy(&mov[1], &i, 4);
		CHECK(pts_image_add_mem(img, cr3[i], mov, 5, 0x1000) == 0);
	}
	struct pts_flow *flow = pts_flow_new(NULL, img);
	int wrong = 0;
	uint32_t k = 7;
	for (int pass = 0; pass < 4 * SPACES; pass++) {
		k = k * 1103515245u + 12345u;
		uint32_t i = (k >> 8) % SPACES;
		wrong += !is_mov_eax(flow, 0x1000, cr3[i], i);
	}
	CHECK(wrong == 0);
	pts_flow_free(flow);
	pts_image_free(img);
}

int main(void)
{
	test_spaces_modes_changes();
	test_many_spaces();
	test_evictions();
	return pts_check_exit();
}
