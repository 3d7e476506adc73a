package dev.outboxinbox.testing;

/** A RabbitMQ broker the tests may declare on, reached as a user with the administrator tag. */
public record RabbitMqEndpoint(String host, int port, String user, String password) {
}
