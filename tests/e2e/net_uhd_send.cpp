// SPDX-License-Identifier: Apache-2.0
// net_uhd_send.cpp — test-only sender for tests/e2e/net_uhd.sh: packs VRT IF
// data packets with UHD's own packer (uhd::transport::vrt::if_hdr_pack_be,
// Debian's libuhd-dev) and sends them to 127.0.0.1:PORT, so that chirp-recv
// is checked against headers chirpd's code did not write.
//   net_uhd_send PORT CPIS PULSES SAMPLES SID CHUNK
// Channel stream SID, sample index s at TSF (no TSI) = s; payload: sc16
// big-endian, I = s % 30011 - 15000, Q = -(s % 30011) + 15000, in chunks of
// CHUNK samples, sent in the order chunk 1, 0, 3, 2, ... (pairs swapped).
#include <uhd/transport/vrt_if_packet.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace vrt = uhd::transport::vrt;

static std::vector<uint32_t> pack(uint32_t sid, uint64_t s, size_t n, size_t count)
{
	std::vector<uint32_t> b(16 + n);
	vrt::if_packet_info_t info;

	info.packet_type = vrt::if_packet_info_t::PACKET_TYPE_DATA;
	info.num_payload_words32 = n;
	info.num_payload_bytes = 4 * n;
	info.packet_count = count;
	info.has_sid = true;
	info.sid = sid;
	info.has_tsf = true;
	info.tsf = s;
	vrt::if_hdr_pack_be(b.data(), info);
	for (size_t i = 0; i < n; i++) {
		int v = (int)((s + i) % 30011) - 15000;
		uint16_t I = (uint16_t)(int16_t)v, Q = (uint16_t)(int16_t)-v;

		b[info.num_header_words32 + i] = htonl((uint32_t)I << 16 | Q);
	}
	b.resize(info.num_packet_words32);
	return b;
}

int main(int argc, char **argv)
{
	if (argc != 7) {
		std::fprintf(stderr, "usage: net_uhd_send PORT CPIS PULSES SAMPLES SID CHUNK\n");
		return 2;
	}
	int port = std::atoi(argv[1]);
	uint64_t cpis = std::strtoull(argv[2], nullptr, 0), total;
	uint64_t pulses = std::strtoull(argv[3], nullptr, 0), samples = std::strtoull(argv[4], nullptr, 0);
	uint32_t sid = (uint32_t)std::strtoul(argv[5], nullptr, 0);
	size_t chunk = std::strtoul(argv[6], nullptr, 0);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	sockaddr_in a{};
	std::vector<std::vector<uint32_t>> pk;

	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (sockaddr *)&a, sizeof(a)) < 0) {
		std::perror("socket");
		return 1;
	}
	total = cpis * pulses * samples;
	for (uint64_t s = 0; s < total; s += chunk)
		pk.push_back(pack(sid, s, total - s < chunk ? total - s : chunk, pk.size() % 16));
	for (size_t i = 0; i < pk.size(); i++) {
		size_t j = (i ^ 1) < pk.size() ? (i ^ 1) : i;   // pairs swapped

		if (send(fd, pk[j].data(), 4 * pk[j].size(), 0) < 0) {
			std::perror("send");
			return 1;
		}
		usleep(200);
	}
	std::printf("%zu packets\n", pk.size());
	return 0;
}
