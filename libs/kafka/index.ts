export type { Admin, Consumer, Kafka, KafkaMessage, Message } from 'kafkajs';
export { createKafka, isKafkaOutage, type KafkaSettings } from './client.js';
export { LingeringProducer } from './lingering-producer.js';
export { partitionOfKey, TopicPartitionCount } from './partitions.js';
export { ensureTopic, kafkaCheck } from './topics.js';
