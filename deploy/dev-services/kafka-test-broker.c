/*
 * Kafka test broker: librdkafka's mock cluster, which speaks the real Kafka protocol, kept in
 * memory. Tests and benchmarks use it because no Kafka broker is packaged for Debian; production
 * uses real Kafka.
 *
 * Usage: kafka-test-broker [broker_count]
 * Prints "BOOTSTRAP <host:port,...>" once ready, then reads commands from stdin, one per line,
 * answering "OK" or "ERR <reason>":
 *   topic <name> <partitions>         create a topic
 *   down | up                         set every broker down / up (data is kept)
 *   error <api_key> <err> <count>     the next <count> requests of <api_key> fail with <err>
 *   leader <topic> <partition> <id>   make broker <id> the partition's leader
 *   quit                              (or EOF) shut down
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  int broker_count = argc > 1 ? atoi(argv[1]) : 1;
  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "log_level", "0", errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
    fprintf(stderr, "%s\n", errstr);
    return 1;
  }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!rk) {
    fprintf(stderr, "rd_kafka_new: %s\n", errstr);
    return 1;
  }
  rd_kafka_mock_cluster_t *cluster = rd_kafka_mock_cluster_new(rk, broker_count);
  if (!cluster) {
    fprintf(stderr, "rd_kafka_mock_cluster_new failed\n");
    return 1;
  }
  printf("BOOTSTRAP %s\n", rd_kafka_mock_cluster_bootstraps(cluster));
  fflush(stdout);

  char line[1024];
  while (fgets(line, sizeof line, stdin)) {
    char name[512];
    int a = 0, b = 0, c = 0;
    if (sscanf(line, "topic %511s %d", name, &a) == 2) {
      rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(cluster, name, a, 1);
      if (err) printf("ERR %s\n", rd_kafka_err2str(err));
      else printf("OK\n");
    } else if (strncmp(line, "down", 4) == 0 || strncmp(line, "up", 2) == 0) {
      int down = line[0] == 'd';
      for (int id = 1; id <= broker_count; id++) {
        if (down) rd_kafka_mock_broker_set_down(cluster, id);
        else rd_kafka_mock_broker_set_up(cluster, id);
      }
      printf("OK\n");
    } else if (sscanf(line, "error %d %d %d", &a, &b, &c) == 3) {
      rd_kafka_resp_err_t *errs = calloc((size_t)c, sizeof *errs);
      for (int i = 0; i < c; i++) errs[i] = (rd_kafka_resp_err_t)b;
      rd_kafka_mock_push_request_errors_array(cluster, (int16_t)a, (size_t)c, errs);
      free(errs);
      printf("OK\n");
    } else if (sscanf(line, "leader %511s %d %d", name, &a, &b) == 3) {
      rd_kafka_resp_err_t err = rd_kafka_mock_partition_set_leader(cluster, name, a, b);
      if (err) printf("ERR %s\n", rd_kafka_err2str(err));
      else printf("OK\n");
    } else if (strncmp(line, "quit", 4) == 0) {
      break;
    } else {
      printf("ERR unknown command\n");
    }
    fflush(stdout);
  }
  rd_kafka_mock_cluster_destroy(cluster);
  rd_kafka_destroy(rk);
  return 0;
}
