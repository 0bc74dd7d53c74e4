@_exported import Foundation
@_exported import Observation

// SwiftUI as far as the README's and the examples' views use it, so they type-check on
// Linux (scripts/readme-swift). Compiled as a module named SwiftUI. Each declaration is
// Apple's (developer.apple.com/documentation/swiftui), with the generic parameters the
// views here do not use left out, as each comment says; the bodies are never run.

/// `@MainActor @preconcurrency protocol View` with `associatedtype Body: View` and
/// `@ViewBuilder @MainActor @preconcurrency var body: Self.Body { get }`.
@MainActor @preconcurrency public protocol View {
    associatedtype Body: View
    @ViewBuilder @MainActor @preconcurrency var body: Self.Body { get }
}

extension Never: View {
    public var body: Never { fatalError("stub") }
}

/// `Optional: View where Wrapped: View` (what `buildIf` returns).
extension Optional: View where Wrapped: View {
    public var body: Never { fatalError("stub") }
}

/// `struct EmptyView`.
public struct EmptyView: View {
    public init() {}
    public var body: Never { fatalError("stub") }
}

/// `struct TupleView<T>`.
public struct TupleView<T>: View {
    public init(_ value: T) {}
    public var body: Never { fatalError("stub") }
}

/// `struct _ConditionalContent<TrueContent, FalseContent>` (what `buildEither` returns).
public struct _ConditionalContent<TrueContent: View, FalseContent: View>: View {
    public var body: Never { fatalError("stub") }
}

/// `@resultBuilder struct ViewBuilder`: `buildBlock()`, `buildBlock(_:)`, the variadic
/// `buildBlock<each Content>(_ content: repeat each Content) -> TupleView<(repeat each Content)>`,
/// `buildIf(_:)` and `buildEither(first:)` / `buildEither(second:)`.
@resultBuilder public struct ViewBuilder {
    public static func buildBlock() -> EmptyView { fatalError("stub") }
    public static func buildBlock<Content: View>(_ content: Content) -> Content { fatalError("stub") }
    public static func buildBlock<each Content: View>(_ content: repeat each Content) -> TupleView<(repeat each Content)> { fatalError("stub") }
    public static func buildIf<Content: View>(_ content: Content?) -> Content? { fatalError("stub") }
    public static func buildEither<TrueContent: View, FalseContent: View>(first: TrueContent) -> _ConditionalContent<TrueContent, FalseContent> { fatalError("stub") }
    public static func buildEither<TrueContent: View, FalseContent: View>(second: FalseContent) -> _ConditionalContent<TrueContent, FalseContent> { fatalError("stub") }
}

/// `struct Text`: `init<S>(_ content: S) where S: StringProtocol`.
public struct Text: View {
    public init<S: StringProtocol>(_ content: S) {}
    public var body: Never { fatalError("stub") }
}

/// `struct HStack<Content>`: `init(alignment:spacing:content:)`, here without `alignment`
/// and `spacing` (both defaulted in Apple's declaration).
public struct HStack<Content: View>: View {
    public init(@ViewBuilder content: () -> Content) {}
    public var body: Never { fatalError("stub") }
}

/// `struct VStack<Content>`: `init(alignment:spacing:content:)`, as HStack.
public struct VStack<Content: View>: View {
    public init(@ViewBuilder content: () -> Content) {}
    public var body: Never { fatalError("stub") }
}

/// `struct ProgressView<Label, CurrentValueLabel>`:
/// `init<V>(value: V?, total: V = 1.0) where Label == EmptyView, CurrentValueLabel == EmptyView, V: BinaryFloatingPoint`.
public struct ProgressView<Label: View, CurrentValueLabel: View>: View {
    public init<V: BinaryFloatingPoint>(value: V?, total: V = 1.0) where Label == EmptyView, CurrentValueLabel == EmptyView {}
    public var body: Never { fatalError("stub") }
}

/// `struct Button<Label>`: `init<S>(_ title: S, action: @escaping @MainActor () -> Void) where Label == Text, S: StringProtocol`.
public struct Button<Label: View>: View {
    public init<S: StringProtocol>(_ title: S, action: @escaping @MainActor () -> Void) where Label == Text {}
    public var body: Never { fatalError("stub") }
}

/// `protocol ShapeStyle`, and `struct Color: ShapeStyle` with `static let red: Color`.
public protocol ShapeStyle: Sendable {}
public struct Color: ShapeStyle, View {
    public static let red = Color()
    public var body: Never { fatalError("stub") }
}
extension ShapeStyle where Self == Color {
    /// `static var red: Color { get }`.
    public static var red: Color { Color() }
}

/// A view the modifiers below return (Apple's are `some View`).
public struct ModifiedView: View {
    public var body: Never { fatalError("stub") }
}

extension View {
    /// `nonisolated func task(name: String? = nil, priority: TaskPriority = .userInitiated,
    /// file: String = #fileID, line: Int = #line, _ action: sending @escaping @isolated(any) () async -> Void) -> some View`.
    /// The action runs on the view's actor (the main actor in `body`): SwiftUI's interface
    /// says so with `@_inheritActorContext`, which documentation pages do not print.
    nonisolated public func task(name: String? = nil, priority: TaskPriority = .userInitiated, file: String = #fileID, line: Int = #line,
                                 @_inheritActorContext _ action: sending @escaping @isolated(any) () async -> Void) -> some View { ModifiedView() }

    /// `func foregroundStyle<S>(_ style: S) -> some View where S: ShapeStyle`.
    public func foregroundStyle<S: ShapeStyle>(_ style: S) -> some View { ModifiedView() }
}

/// `@propertyWrapper struct State<Value>: DynamicProperty`: `init(wrappedValue:)`,
/// `var wrappedValue: Value { get nonmutating set }`.
@propertyWrapper public struct State<Value> {
    public init(wrappedValue value: Value) {}
    public var wrappedValue: Value {
        get { fatalError("stub") }
        nonmutating set {}
    }
}

// MARK: The example app's (Examples/CourierDownloads) scenes, lists and modifiers

/// `@MainActor @preconcurrency protocol App` with `associatedtype Body: Scene`,
/// `@SceneBuilder @MainActor @preconcurrency var body: Self.Body { get }` and
/// `@MainActor @preconcurrency init()`.
@MainActor @preconcurrency public protocol App {
    associatedtype Body: Scene
    @SceneBuilder @MainActor @preconcurrency var body: Self.Body { get }
    @MainActor @preconcurrency init()
}

extension App {
    /// `@MainActor @preconcurrency static func main()`.
    @MainActor @preconcurrency public static func main() {}
}

/// `@MainActor @preconcurrency protocol Scene` with `associatedtype Body: Scene` and
/// `@SceneBuilder @MainActor @preconcurrency var body: Self.Body { get }`.
@MainActor @preconcurrency public protocol Scene {
    associatedtype Body: Scene
    @SceneBuilder @MainActor @preconcurrency var body: Self.Body { get }
}

extension Never: Scene {}

/// `@resultBuilder struct SceneBuilder`: Apple's `buildBlock<each Content>(_ content: repeat each Content) -> some Scene
/// where repeat each Content: Scene`, here for one scene only (what the example has; more is refused, never wrongly accepted).
@resultBuilder public struct SceneBuilder {
    public static func buildBlock<Content: Scene>(_ content: Content) -> Content { fatalError("stub") }
}

/// `struct WindowGroup<Content> where Content: View`: `nonisolated init(@ContentBuilder content: () -> Content)`
/// (a `ViewBuilder` here).
public struct WindowGroup<Content: View>: Scene {
    nonisolated public init(@ViewBuilder content: () -> Content) {}
    public var body: Never { fatalError("stub") }
}

/// A scene the modifiers below return (Apple's are `some Scene`).
public struct ModifiedScene: Scene {
    public var body: Never { fatalError("stub") }
}

extension Scene {
    /// `nonisolated func onChange<V>(of value: V, initial: Bool = false, _ action: @escaping (V, V) -> Void) -> some Scene where V: Equatable`
    /// (iOS 17, macOS 14).
    @available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, *)
    nonisolated public func onChange<V: Equatable>(of value: V, initial: Bool = false, _ action: @escaping (V, V) -> Void) -> some Scene { ModifiedScene() }
}

/// `enum ScenePhase`: `Comparable`, `Hashable`, `Sendable`; cases `background`, `inactive`, `active`.
public enum ScenePhase: Comparable, Hashable, Sendable {
    case background, inactive, active
}

/// `struct EnvironmentValues` with `var scenePhase: ScenePhase { get set }`.
public struct EnvironmentValues {
    public var scenePhase: ScenePhase { get { .active } set {} }
}

/// `@propertyWrapper struct Environment<Value>`: `init(_ keyPath: KeyPath<EnvironmentValues, Value>)`,
/// `var wrappedValue: Value { get }`.
@propertyWrapper public struct Environment<Value> {
    public init(_ keyPath: KeyPath<EnvironmentValues, Value>) {}
    public var wrappedValue: Value { fatalError("stub") }
}

/// `struct ForEach<Data, ID, Content> where Data: RandomAccessCollection, ID: Hashable`.
public struct ForEach<Data: RandomAccessCollection, ID: Hashable, Content>: View {
    public var body: Never { fatalError("stub") }
}

/// `struct List<SelectionValue, Content> where SelectionValue: Hashable, Content: View`:
/// `init<Data, RowContent>(_ data: Data, rowContent: @escaping (Data.Element) -> RowContent)
/// where Content == ForEach<Data, Data.Element.ID, RowContent>, Data: RandomAccessCollection,
/// RowContent: View, Data.Element: Identifiable` (with `SelectionValue == Never`; Apple marks
/// `rowContent` with its `@ContentBuilder`, a `ViewBuilder` here).
public struct List<SelectionValue: Hashable, Content: View>: View {
    nonisolated public init<Data: RandomAccessCollection, RowContent: View>(_ data: Data, @ViewBuilder rowContent: @escaping (Data.Element) -> RowContent)
        where Content == ForEach<Data, Data.Element.ID, RowContent>, Data.Element: Identifiable, SelectionValue == Never {}
    public var body: Never { fatalError("stub") }
}

extension View {
    /// `nonisolated func disabled(_ disabled: Bool) -> some View`.
    nonisolated public func disabled(_ disabled: Bool) -> some View { ModifiedView() }
}

#if canImport(UIKit)
import UIKit

/// `@MainActor @preconcurrency @propertyWrapper struct UIApplicationDelegateAdaptor<DelegateType>
/// where DelegateType: NSObject, DelegateType: UIApplicationDelegate`:
/// `@MainActor @preconcurrency init(_ delegateType: DelegateType.Type = DelegateType.self)`,
/// `@MainActor @preconcurrency var wrappedValue: DelegateType { get }`.
@MainActor @preconcurrency @propertyWrapper
public struct UIApplicationDelegateAdaptor<DelegateType: NSObject & UIApplicationDelegate> {
    @MainActor @preconcurrency public init(_ delegateType: DelegateType.Type = DelegateType.self) {}
    @MainActor @preconcurrency public var wrappedValue: DelegateType { fatalError("stub") }
}
#endif
